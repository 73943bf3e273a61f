public import PostgresNIO

/// Rows of bound values for one statement, bound as one array a column and read back as rows,
/// `SELECT * FROM unnest($1::text[], $2::timestamptz[])`: a batch written, or matched against a
/// table, in one round trip. The statement's text is the same whatever the number of rows (a
/// `VALUES` list's grew with them), so it can be prepared once a connection (``PreparedSQL``).
///
///     var rows = BoundRows(columns: .text, .timestamptz)
///     for alert in alerts { rows.append { $0.bind(alert.id); $0.bind(alert.sentAt?.postgres) } }
///     try await db.run(rows.query { "UPDATE alert SET sent_at = v.sent_at FROM (\($0)) AS v(id, sent_at) WHERE ..." })
public struct BoundRows: Sendable {
    /// One row's values, bound in the order of the statement's columns.
    public struct Row {
        fileprivate var columns: [ColumnArray]
        fileprivate var position = 0

        /// Binds `value` as the row's next column, of the type the rows were made with.
        public mutating func bind<Value: PostgresNonThrowingEncodable>(_ value: Value?) {
            precondition(
                self.position < self.columns.count && self.columns[self.position].element == Value.psqlType,
                "a row binds the columns' types, in their order"
            )
            self.columns[self.position].append(value)
            self.position += 1
        }
    }

    private var columns: [ColumnArray]
    /// Values bound for the rest of the statement, numbered before the columns.
    private var bindings = PostgresBindings()
    public private(set) var count = 0

    /// Rows of `columns`, by their types: the statement's text is fixed by them (a statement
    /// prepared once is made with no rows).
    public init(columns: PostgresDataType...) {
        self.columns = columns.map(ColumnArray.init(element:))
    }

    public var isEmpty: Bool { self.count == 0 }

    /// Adds a row, its values bound by `fill`.
    public mutating func append(_ fill: (inout Row) -> Void) {
        // The columns move into the row and back, never copied (a copy per row is quadratic).
        var row = Row(columns: [])
        swap(&row.columns, &self.columns)
        fill(&row)
        precondition(row.position == row.columns.count, "a row binds every column")
        swap(&row.columns, &self.columns)
        self.count += 1
    }

    /// Binds `value` for the rest of the statement: answers its placeholder.
    public mutating func bind<Value: PostgresNonThrowingEncodable>(_ value: Value) -> String {
        self.bindings.append(value, context: .default)
        return "$\(self.bindings.count)"
    }

    /// The statement `sql` makes of the rows, given as `SELECT * FROM unnest(...)`.
    public func query(_ sql: (String) -> String) -> PostgresQuery {
        var bindings = self.bindings
        var arrays: [String] = []
        for column in self.columns {
            bindings.append(column, context: .default)
            // Cast: a column of NULLs alone must not be taken for text.
            arrays.append("$\(bindings.count)::\(column.psqlType.knownSQLName ?? "")")
        }
        return PostgresQuery(
            unsafeSQL: sql("SELECT * FROM unnest(\(arrays.joined(separator: ", ")))"),
            binds: bindings
        )
    }
}

/// A one-dimensional array of `element`s, NULLs among them, in PostgreSQL's binary array format
/// (`array_recv`): a header, then each element's length (-1 for a NULL) and bytes.
struct ColumnArray: PostgresDynamicTypeEncodable, Sendable {
    let element: PostgresDataType
    private var elements = ByteBuffer()
    private var count: Int32 = 0
    private var hasNull = false

    init(element: PostgresDataType) {
        self.element = element
        precondition(self.psqlType != PostgresDataType(0), "no array of \(element) is known here")
    }

    mutating func append<Value: PostgresNonThrowingEncodable>(_ value: Value?) {
        self.count += 1
        guard let value else {
            self.hasNull = true
            self.elements.writeInteger(Int32(-1))
            return
        }
        precondition(Value.psqlFormat == .binary, "array elements are bound in binary")
        let lengthAt = self.elements.writerIndex
        self.elements.writeInteger(Int32(0))
        value.encode(into: &self.elements, context: .default)
        self.elements.setInteger(Int32(self.elements.writerIndex - lengthAt - 4), at: lengthAt)
    }

    var psqlType: PostgresDataType {
        switch self.element {
        case .text: .textArray
        case .int8: .int8Array
        case .int4: .int4Array
        case .bool: .boolArray
        case .bytea: .byteaArray
        case .timestamptz: .timestamptzArray
        case .float8: .float8Array
        default: PostgresDataType(0)
        }
    }

    var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer,
        context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeInteger(Int32(1))  // dimensions
        byteBuffer.writeInteger(Int32(self.hasNull ? 1 : 0))
        byteBuffer.writeInteger(self.element.rawValue)
        byteBuffer.writeInteger(self.count)  // the dimension's length
        byteBuffer.writeInteger(Int32(1))  // its lower bound
        byteBuffer.writeImmutableBuffer(self.elements)
    }
}
