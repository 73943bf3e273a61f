import Foundation

/// Where a PostgreSQL store is: `postgres://USER@HOST:PORT/DATABASE`, the password apart (from a
/// file or the environment, never in the address, which shows in process lists and logs).
/// `?sslmode=disable|prefer|require` as libpq reads it; `prefer` when not given.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var user: String
    public var database: String
    public var password: String?
    public var tls: TLSMode

    public init(host: String, port: Int, user: String, database: String, password: String?, tls: TLSMode) {
        self.host = host
        self.port = port
        self.user = user
        self.database = database
        self.password = password
        self.tls = tls
    }

    /// Whether `text` names a PostgreSQL store rather than a file.
    public static func isAddress(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Reads `url`; `password` comes from elsewhere.
    /// - Throws: ``PostgresLocationInvalid`` saying what is wrong with it.
    public init(url text: String, password: String?) throws {
        guard Self.isAddress(text), let url = URLComponents(string: text) else {
            throw PostgresLocationInvalid("\(text) is not a postgres://USER@HOST:PORT/DATABASE address")
        }
        guard url.password == nil else {
            throw PostgresLocationInvalid(
                "the store's address holds a password: give it in --store-password-file or HEARTH_STORE_PASSWORD"
            )
        }
        guard let user = url.user, !user.isEmpty else {
            throw PostgresLocationInvalid("the store's address names no user: postgres://USER@HOST:PORT/DATABASE")
        }
        guard let host = url.host, !host.isEmpty else {
            throw PostgresLocationInvalid("the store's address names no host: postgres://USER@HOST:PORT/DATABASE")
        }
        let database = String(url.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw PostgresLocationInvalid("the store's address names no database: postgres://USER@HOST:PORT/DATABASE")
        }
        var tls = TLSMode.prefer
        for item in url.queryItems ?? [] {
            guard item.name == "sslmode", let mode = item.value.flatMap(TLSMode.init(rawValue:)) else {
                throw PostgresLocationInvalid(
                    "the store's address takes only sslmode=disable, prefer or require, not \(item.name)=\(item.value ?? "")"
                )
            }
            tls = mode
        }
        guard (1...65535).contains(url.port ?? 5432) else {
            throw PostgresLocationInvalid("the store's port must be 1-65535")
        }
        self.init(
            host: host,
            port: url.port ?? 5432,
            user: user.removingPercentEncoding ?? user,
            database: database.removingPercentEncoding ?? database,
            password: password,
            tls: tls
        )
    }

    /// The address without the password, for logs.
    public var description: String {
        "postgres://\(self.user)@\(self.host):\(self.port)/\(self.database)?sslmode=\(self.tls.rawValue)"
    }
}

/// A store address that cannot be used, and why.
public struct PostgresLocationInvalid: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
