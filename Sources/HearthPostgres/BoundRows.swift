public import PostgresNIO

/// Rows of bound values for one statement, `VALUES ($1, $2), ($3, $4)`: a batch written, or
/// matched against a table, in one round trip (PostgresNIO binds no array holding a NULL).
///
///     var rows = BoundRows()
///     for alert in alerts { rows.append { $0.bind(alert.id); $0.bind(alert.sentAt?.postgres) } }
///     try await db.run(rows.query { "UPDATE alert SET sent_at = v.sent_at FROM (\($0)) AS v(id, sent_at) WHERE ..." })
public struct BoundRows {
    /// One row's values, bound in the order of the statement's columns.
    public struct Row {
        fileprivate var bindings: PostgresBindings
        /// The statement's `VALUES` list so far, this row's placeholders last.
        fileprivate var text: String
        fileprivate var columns = 0

        /// Binds `value` as the row's next column, cast to its type: a column of NULLs alone must
        /// not be taken for text (PostgresNIO binds NULL without a type).
        public mutating func bind<Value: PostgresNonThrowingEncodable>(_ value: Value?) {
            if let value { self.bindings.append(value, context: .default) } else { self.bindings.appendNull() }
            // Written into the list in place: no string a placeholder, no list of them a row.
            if self.columns > 0 { self.text += ", " }
            self.columns += 1
            self.text += "$"
            self.text += String(self.bindings.count)
            if let type = Value.psqlType.knownSQLName {
                self.text += "::"
                self.text += type
            }
        }
    }

    private var bindings = PostgresBindings()
    private var text = "VALUES "
    public private(set) var count = 0

    public init() {}

    public var isEmpty: Bool { self.count == 0 }

    /// Adds a row, its values bound by `fill`.
    public mutating func append(_ fill: (inout Row) -> Void) {
        // The bindings and the text move into the row and back, never copied (a copy per row is
        // quadratic).
        var row = Row(bindings: PostgresBindings(), text: "")
        swap(&row.bindings, &self.bindings)
        swap(&row.text, &self.text)
        row.text += self.count == 0 ? "(" : ", ("
        fill(&row)
        row.text += ")"
        swap(&row.bindings, &self.bindings)
        swap(&row.text, &self.text)
        self.count += 1
    }

    /// Binds `value` after the rows, for the rest of the statement: answers its placeholder.
    public mutating func bind<Value: PostgresNonThrowingEncodable>(_ value: Value) -> String {
        self.bindings.append(value, context: .default)
        return "$\(self.bindings.count)"
    }

    /// The statement `sql` makes of the rows' `VALUES ...` list.
    public func query(_ sql: (String) -> String) -> PostgresQuery {
        PostgresQuery(unsafeSQL: sql(self.text), binds: self.bindings)
    }
}
