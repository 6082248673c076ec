package registry.spark.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.DecoderFactory;
import org.apache.spark.sql.avro.AvroDeserializer;
import org.apache.spark.sql.avro.AvroOptions;
import org.apache.spark.sql.avro.SchemaConverters;
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeBlock;
import org.apache.spark.sql.catalyst.expressions.codegen.CodeGenerator;
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenContext;
import org.apache.spark.sql.catalyst.expressions.codegen.ExprCode;
import org.apache.spark.sql.catalyst.expressions.codegen.JavaCode;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import scala.Option;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Confluent-framed Avro (magic 0, a 4-byte big-endian schema id, the Avro payload) in a
 * binary column, decoded into the reader schema's Catalyst struct in one step.
 *
 * <p>It does what registry/spark/decode.py otherwise writes as a CASE over the header
 * with one spark-avro {@code from_avro} per writer schema, without what that costs per
 * record: the payload copied out of the value, the header compared once per writer, and
 * Avro's resolving decoder, which interprets a grammar of the two schemas symbol by
 * symbol. Spark's public API has no expression that reads a binary from an offset or
 * dispatches on its bytes, hence this one.
 *
 * <p>Each writer's payload is read into the reader's shape by Avro's own fast reader
 * ({@code FastReaderBuilder}, which spark-avro leaves off): it plans the schema
 * resolution once per writer and reader, then reads with plain binary decoding. The
 * conversion to Catalyst is spark-avro's ({@link AvroDeserializer}, to the type
 * {@link SchemaConverters} derives from the reader schema, made nullable as
 * {@code from_avro}'s PERMISSIVE mode makes it), so the rows are those
 * {@code from_avro} gives.
 *
 * <p>A record that does not decode (fewer than 5 bytes, another magic byte, an id not
 * among the writers, a payload Avro rejects) is null; decode.py says why, for those
 * records only.
 *
 * <p>{@code spec} is JSON: {@code {"reader": schema text, "options": {from_avro options},
 * "writers": [{"id": n, "schema": schema text}, ...]}}, the writers being those the
 * reader can read.
 *
 * <p>It extends {@link Expression} rather than Catalyst's UnaryExpression, whose final
 * Scala methods javac cannot see as implementing TreeNode's generic ones.
 */
public final class FramedAvroToCatalyst extends Expression implements Serializable {
    private static final long serialVersionUID = 1L;
    static final int HEADER_SIZE = 5;

    private final Expression child;
    private final String spec;
    private transient Seq<Expression> children;
    private transient Spec parsed;
    private transient DataType dataType;
    private transient Decoding decoding;

    public FramedAvroToCatalyst(Expression child, String spec) {
        this.child = child;
        this.spec = spec;
    }

    public Expression child() {
        return child;
    }

    @Override
    public Seq<Expression> children() {
        if (children == null) {
            children = CollectionConverters.asScala(List.of(child)).toList();
        }
        return children;
    }

    @Override
    public Expression withNewChildrenInternal(IndexedSeq<Expression> newChildren) {
        return new FramedAvroToCatalyst(newChildren.apply(0), spec);
    }

    public String spec() {
        return spec;
    }

    private Spec parsed() {
        if (parsed == null) {
            parsed = Spec.parse(spec);
        }
        return parsed;
    }

    @Override
    public DataType dataType() {
        if (dataType == null) {
            AvroOptions avro = parsed().avroOptions();
            dataType = SchemaConverters.toSqlType(parsed().reader, avro.useStableIdForUnionType(),
                avro.stableIdPrefixForUnionType(), avro.recursiveFieldMaxDepth()).dataType().asNullable();
        }
        return dataType;
    }

    /** What plans print: the writer ids, not the spec (every schema's text). */
    @Override
    public scala.collection.Iterator<Object> flatArguments() {
        return CollectionConverters.asScala(List.<Object>of(child, "writer ids " + Arrays.toString(parsed().ids))).iterator();
    }

    @Override
    public boolean nullable() {
        return true;
    }

    @Override
    public TypeCheckResult checkInputDataTypes() {
        if (child.dataType() instanceof BinaryType) {
            return TypeCheckResult.TypeCheckSuccess$.MODULE$;
        }
        return new TypeCheckResult.TypeCheckFailure(
            "registry.spark decodes a binary column, not " + child.dataType().simpleString());
    }

    @Override
    public String prettyName() {
        return "registry_framed_avro";
    }

    /**
     * Whether this build of the expression links against the Spark on the class path: it
     * uses spark-avro's converter, which is not a public API and changes between Spark
     * versions (the jar is built against the pyspark in pyproject.toml). Throws, where it
     * does not, what the JVM throws (a LinkageError).
     */
    public static boolean probe() {
        String reader = "{\"type\": \"record\", \"name\": \"Probe\", \"fields\": [{\"name\": \"s\", \"type\": \"string\"}]}";
        ObjectNode spec = new ObjectMapper().createObjectNode().put("reader", reader);
        spec.putObject("options");
        spec.putArray("writers").addObject().put("id", 1).put("schema", reader);
        return new FramedAvroToCatalyst(null, spec.toString()).decode(new byte[] {0, 0, 0, 0, 1, 2, 'x'}) != null;
    }

    @Override
    public Object eval(InternalRow input) {
        Object value = child.eval(input);
        return value == null ? null : decode((byte[]) value);
    }

    /** The row for one framed value, or null if it does not decode. Per task, not thread-safe. */
    public Object decode(byte[] value) {
        if (decoding == null) {
            decoding = new Decoding(parsed(), dataType());
        }
        return decoding.decode(value);
    }

    @Override
    public ExprCode doGenCode(CodegenContext ctx, ExprCode ev) {
        ExprCode value = child.genCode(ctx);
        String self = ctx.addReferenceObj("framedAvro", this, getClass().getName());
        String type = CodeGenerator.javaType(dataType());
        String code = value.code() + "\n"
            + "boolean " + ev.isNull() + " = " + value.isNull() + ";\n"
            + type + " " + ev.value() + " = null;\n"
            + "if (!" + ev.isNull() + ") {\n"
            + "  " + ev.value() + " = (" + type + ") " + self + ".decode(" + value.value() + ");\n"
            + "  " + ev.isNull() + " = " + ev.value() + " == null;\n"
            + "}\n";
        CodeBlock block = new CodeBlock(CollectionConverters.asScala(List.of(code)).toList(),
            CollectionConverters.asScala(List.<JavaCode>of()).toList());
        return ev.copy(block, ev.isNull(), ev.value());
    }

    @Override
    public int productArity() {
        return 2;
    }

    @Override
    public Object productElement(int n) {
        switch (n) {
            case 0: return child;
            case 1: return spec;
            default: throw new IndexOutOfBoundsException(String.valueOf(n));
        }
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof FramedAvroToCatalyst;
    }

    @Override
    public boolean equals(Object that) {
        return that instanceof FramedAvroToCatalyst other
            && child.equals(other.child) && spec.equals(other.spec);
    }

    @Override
    public int hashCode() {
        return Objects.hash(child, spec);
    }

    /** The parsed spec: the reader's schema and options; the writers' schemas, parsed when first met. */
    static final class Spec {
        final Schema reader;
        final Map<String, String> options = new HashMap<>();
        final int[] ids;           // ascending
        final String[] writers;    // schema texts, by position in ids

        private Spec(Schema reader, int[] ids, String[] writers) {
            this.reader = reader;
            this.ids = ids;
            this.writers = writers;
        }

        static Spec parse(String text) {
            try {
                JsonNode root = new ObjectMapper().readTree(text);
                TreeMap<Integer, String> writers = new TreeMap<>();
                for (JsonNode writer : root.get("writers")) {
                    writers.put(writer.get("id").asInt(), writer.get("schema").asText());
                }
                Spec spec = new Spec(parseSchema(root.get("reader").asText()),
                    writers.keySet().stream().mapToInt(Integer::intValue).toArray(), writers.values().toArray(new String[0]));
                root.get("options").fields().forEachRemaining(e -> spec.options.put(e.getKey(), e.getValue().asText()));
                return spec;
            } catch (IOException | RuntimeException e) {
                throw new IllegalArgumentException("registry.spark: malformed decoder spec", e);
            }
        }

        /** spark-avro's reading of the options, as from_avro reads them. */
        AvroOptions avroOptions() {
            return AvroOptions.apply(scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(options)));
        }

        static Schema parseSchema(String text) {
            // As from_avro parses its schemas: defaults are not validated.
            return new Schema.Parser().setValidateDefaults(false).parse(text);
        }
    }

    /** Per task: a reader per writer id met, and what they reuse. Not thread-safe. */
    static final class Decoding {
        private final Spec spec;
        private final AvroDeserializer deserializer;
        private final DatumReader<?>[] readers;
        private BinaryDecoder decoder;
        private Object reused;

        Decoding(Spec spec, DataType dataType) {
            AvroOptions avro = spec.avroOptions();
            this.spec = spec;
            this.deserializer = new AvroDeserializer(spec.reader, dataType, avro.datetimeRebaseModeInRead(),
                avro.useStableIdForUnionType(), avro.stableIdPrefixForUnionType(), avro.recursiveFieldMaxDepth());
            this.readers = new DatumReader<?>[spec.ids.length];
        }

        Object decode(byte[] value) {
            if (value.length < HEADER_SIZE || value[0] != 0) {
                return null;
            }
            int id = (value[1] & 0xff) << 24 | (value[2] & 0xff) << 16 | (value[3] & 0xff) << 8 | (value[4] & 0xff);
            int at = Arrays.binarySearch(spec.ids, id);
            if (at < 0) {
                return null;
            }
            try {
                decoder = DecoderFactory.get().binaryDecoder(value, HEADER_SIZE, value.length - HEADER_SIZE, decoder);
                reused = reader(at).read(reused, decoder);
                Option<Object> row = deserializer.deserialize(reused);
                return row.isDefined() ? row.get() : null;
            } catch (IOException | RuntimeException | StackOverflowError e) {
                // What from_avro's PERMISSIVE mode catches (bad lengths and indexes, a short
                // payload, nesting too deep); decode.py reports a truncated or corrupt payload.
                return null;
            }
        }

        @SuppressWarnings("unchecked")
        private DatumReader<Object> reader(int at) {
            if (readers[at] == null) {
                GenericData model = new GenericData();
                model.setFastReaderEnabled(true);
                readers[at] = new GenericDatumReader<>(Spec.parseSchema(spec.writers[at]), spec.reader, model);
            }
            return (DatumReader<Object>) readers[at];
        }
    }
}
