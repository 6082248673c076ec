"""The only place that knows HTTP: the app factory and error mapping (`app`), request
and response bodies (`bodies`), the routes, the id fast path, the ASGI bridge, the
server and forwarding to the leader."""
