public import GRDB

/// Deletes old rows user by user, in keyset order of user id, so that no transaction holds the
/// writer for long however much a store has to lose (the first pass over a store that never
/// pruned may hold a user's year): `usersPerBatch` users at a time, then one transaction of at
/// most `rowsPerTransaction` rows; a user cut short is taken up again, with what is left of it.
public enum UserBatches {
    /// - Parameters:
    ///   - users: up to `limit` users whose id comes after `after` (user ids are never empty),
    ///     in id order.
    ///   - id: a user's id.
    ///   - delete: deletes what one user has to lose, at most `budget` rows; answers how many
    ///     rows went, by kind.
    /// - Returns: how many rows went, by kind.
    public static func prune<User: Sendable>(
        writer: any DatabaseWriter,
        usersPerBatch: Int,
        rowsPerTransaction: Int,
        users: @escaping @Sendable (_ db: Database, _ after: String, _ limit: Int) throws -> [User],
        id: @escaping @Sendable (User) -> String,
        delete: @escaping @Sendable (_ db: Database, User, _ budget: Int) throws -> [String: Int]
    ) async throws -> [String: Int] {
        var deleted: [String: Int] = [:]
        var after = ""
        while true {
            let batch = try await writer.read { [after] db in try users(db, after, usersPerBatch) }
            guard !batch.isEmpty else { return deleted }
            // The last user finished in this transaction (nil: the first one is not, yet).
            let (finished, counts) = try await writer.write { db in
                var budget = rowsPerTransaction
                var counts: [String: Int] = [:]
                var finished: String?
                for user in batch {
                    let gone = try delete(db, user, budget)
                    counts.merge(gone, uniquingKeysWith: +)
                    budget -= gone.values.reduce(0, +)
                    guard budget > 0 else { break }
                    finished = id(user)
                }
                return (finished, counts)
            }
            deleted.merge(counts, uniquingKeysWith: +)
            after = finished ?? after
        }
    }
}
