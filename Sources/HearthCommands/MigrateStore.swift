import ArgumentParser
import Foundation
import HearthCommandLine
import HearthPostgres
import HearthStore
import SafetyService

/// `hearth migrate-store safety`: copies safety's SQLite store into an empty PostgreSQL database.
struct MigrateStore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-store",
        abstract: "Copy safety's SQLite store into an empty PostgreSQL database.",
        discussion: """
            Stop safety first (the copy takes the file's lock, and refuses while a process holds
            it), copy, then start safety with --store. The copy is one transaction: every switch,
            contact, check-in, message of the outbox (pending ones included), link and what each
            address answered; the counts are compared before it commits. A database that holds
            safety's rows already is refused. Give it the data key file safety runs with: sealed
            values are copied as they are.
              hearth migrate-store safety --from data/safety.sqlite \\
                --to postgres://hearth@db.internal:5432/hearth --store-password-file /etc/hearth/pg.pass
            """
    )

    @Argument(help: "The process whose store is copied: safety (the only one with a PostgreSQL store).")
    var name: String

    @Option(help: "The SQLite file to copy.")
    var from: String

    @Option(help: "The PostgreSQL database: postgres://USER@HOST:PORT/DATABASE[?sslmode=disable|prefer|require].")
    var to: String

    @Option(help: "A file holding the database's password (else HEARTH_STORE_PASSWORD).")
    var storePasswordFile: String?

    @Option(help: "Folder holding the default secrets.")
    var data = "./data"

    @OptionGroup var secrets: SecretOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard self.name == ProcessName.safety.rawValue else {
            throw ValidationError("only safety has a PostgreSQL store; \(self.name) keeps its SQLite file")
        }
        guard FileManager.default.fileExists(atPath: self.from) else {
            throw ValidationError("--from \(self.from) does not exist")
        }
        guard PostgresLocation.isAddress(self.to) else {
            throw ValidationError("--to takes a postgres://USER@HOST:PORT/DATABASE address, not \(self.to)")
        }
    }

    func run() async throws {
        let logger = self.logging.bootstrap()
        var password = ProcessInfo.processInfo.environment["HEARTH_STORE_PASSWORD"]
        if let file = self.storePasswordFile {
            password = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .newlines)
        }
        let target: PostgresLocation
        do {
            target = try PostgresLocation(url: self.to, password: password)
        } catch let error as PostgresLocationInvalid {
            throw ValidationError(error.description)
        }
        // Never a new ring: the copy needs the keys the file was sealed with.
        let keyFile =
            self.secrets.dataKeyFile.map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: self.data).appendingPathComponent("secrets/data.key")
        guard FileManager.default.fileExists(atPath: keyFile.path) else {
            throw CommandFailure("\(keyFile.path) does not exist: name the file safety runs with (--data-key-file)")
        }
        do {
            let copied = try await SafetyService.copyStore(
                from: .file(self.from),
                to: target,
                keys: try DataKeys(file: keyFile),
                logger: logger
            )
            for (table, rows) in copied.sorted(by: { $0.key < $1.key }) {
                print("\(table): \(rows) rows")
            }
            print("copied into \(target); start safety with --store \(self.to)")
        } catch let error as StoreCopyRefused {
            throw CommandFailure(error.description)
        }
    }
}
