public import GRDB
public import HearthCore

extension FetchableRecord where Self: TableRecord {
    /// One page of the rows that match `filter` (SQL with `?` placeholders for `arguments`),
    /// ordered by (`column`, `id`): after `cursor` (none: from the start), at most `limit`.
    /// Rows written meanwhile never shift a page. Statements are prepared once per connection (at
    /// most four per filter). `filter` and `column` must be fixed SQL text, never a value.
    public static func fetchPage(
        _ db: Database,
        where filter: String,
        arguments: StatementArguments,
        orderedBy column: String,
        descending: Bool,
        after cursor: PageCursor?,
        limit: Int
    ) throws -> [Self] {
        let page = KeysetPage(
            "SELECT * FROM \"\(Self.databaseTableName)\"",
            filter: filter,
            arguments: arguments,
            column: column,
            descending: descending,
            after: cursor,
            limit: limit
        )
        return try Self.fetchAll(db.cachedStatement(sql: page.sql), arguments: page.arguments)
    }
}

extension Database {
    /// ``FetchableRecord/fetchPage(_:where:arguments:orderedBy:descending:after:limit:)`` for
    /// rows read by position: `query` (`SELECT ... FROM ...`, no `WHERE`), each row made by
    /// `read` from its columns.
    public func fetchPage<T>(
        _ query: String,
        where filter: String,
        arguments: StatementArguments,
        orderedBy column: String,
        descending: Bool,
        after cursor: PageCursor?,
        limit: Int,
        read: (StatementColumns) throws -> T
    ) throws -> [T] {
        let page = KeysetPage(
            query,
            filter: filter,
            arguments: arguments,
            column: column,
            descending: descending,
            after: cursor,
            limit: limit
        )
        return try self.cachedStatement(sql: page.sql).fetchAll(arguments: page.arguments, read: read)
    }
}

/// The SQL and arguments of one keyset page.
private struct KeysetPage {
    var sql: String
    var arguments: StatementArguments

    init(
        _ query: String,
        filter: String,
        arguments: StatementArguments,
        column: String,
        descending: Bool,
        after cursor: PageCursor?,
        limit: Int
    ) {
        self.sql = "\(query) WHERE \(filter)"
        self.arguments = arguments
        if let cursor {
            self.sql += " AND (\(column), id) \(descending ? "<" : ">") (?, ?)"
            self.arguments += [cursor.time, cursor.id]
        }
        self.sql += descending ? " ORDER BY \(column) DESC, id DESC LIMIT ?" : " ORDER BY \(column), id LIMIT ?"
        self.arguments += [limit]
    }
}
