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
        var sql = "SELECT * FROM \"\(Self.databaseTableName)\" WHERE \(filter)"
        var arguments = arguments
        if let cursor {
            sql += " AND (\(column), id) \(descending ? "<" : ">") (?, ?)"
            arguments += [cursor.time, cursor.id]
        }
        sql += descending ? " ORDER BY \(column) DESC, id DESC LIMIT ?" : " ORDER BY \(column), id LIMIT ?"
        arguments += [limit]
        return try Self.fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }
}
