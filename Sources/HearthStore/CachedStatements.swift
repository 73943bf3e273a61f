public import GRDB

extension FetchableRecord where Self: TableRecord {
    /// The record whose `column` (its primary key: `id` unless named) is `key`, through a
    /// statement prepared once per connection. GRDB's `fetchOne(_:key:)` writes the SQL,
    /// prepares it and runs its authorizer over it on every call: several times the cost of the
    /// read itself on a call's hot path.
    public static func fetchOne(
        _ db: Database,
        cachedKey key: some DatabaseValueConvertible,
        column: String = "id"
    ) throws -> Self? {
        try Self.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM \"\(Self.databaseTableName)\" WHERE \"\(column)\" = ?"),
            arguments: [key]
        )
    }
}
