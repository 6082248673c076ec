"""`schema-registry <command>`: operators' tools that speak only the public REST API.

    schema-registry subjects --url http://sr-1:8081,http://sr-2:8081 --prefix orders-
    schema-registry check orders-value orders.avsc        # exit 0 compatible, 1 not, 2 error
    schema-registry export backup.tar.gz && schema-registry import backup.tar.gz --url http://new:8081

`arguments` builds the command line (argparse only, so `schema-registry --help` works
on a client-only install), `connection` turns the client's auth and TLS options into a
`registry.client` transport, `commands` runs each command, `output` prints tables or
JSON and errors, `schema_files` reads schemas and their references from files,
`migration` exports, imports and copies registries (`import_journal` remembers a
target's mode while an import holds it in IMPORT), and `schema_diff` compares versions.

Client side: nothing here imports the server (tests/unit/test_client_side_imports.py).
The tables and the progress bar need the `admin` extra (rich).
"""
