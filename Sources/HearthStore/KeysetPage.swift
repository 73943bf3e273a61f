public import GRDB
public import HearthCore

extension Database {
    /// One page of the rows of `query` (`SELECT ... FROM ...`, no `WHERE`) that match `filter`
    /// (SQL with `?` placeholders for `arguments`), ordered by (`column`, `id`): after `cursor`
    /// (none: from the start), at most `limit`, each made by `read` from its columns (by
    /// position). Rows written meanwhile never shift a page. Statements are prepared once per
    /// connection (at most four per filter). `query`, `filter` and `column` must be fixed SQL
    /// text, never a value.
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
        var sql = "\(query) WHERE \(filter)"
        var arguments = arguments
        if let cursor {
            sql += " AND (\(column), id) \(descending ? "<" : ">") (?, ?)"
            arguments += [cursor.time, cursor.id]
        }
        sql += descending ? " ORDER BY \(column) DESC, id DESC LIMIT ?" : " ORDER BY \(column), id LIMIT ?"
        arguments += [limit]
        return try self.cachedStatement(sql: sql).fetchAll(arguments: arguments, read: read)
    }
}
