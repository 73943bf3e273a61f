import ArgumentParser
import Foundation
import HearthCommandLine
import HearthStore

/// `hearth make-secrets`: writes the secrets a deployment needs into one folder, for operators
/// who run the processes apart (docker-compose, one host per process).
struct MakeSecrets: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "make-secrets",
        abstract: "Write a new credential for every link between processes, and a token secret, into a folder.",
        discussion: """
            Each file holds 32 random bytes (hex), readable by its owner only; files already
            there are kept, so running it again adds only what is missing. Give each process
            only the files of its own links (CALLER-CALLEE.key: the processes it calls and that
            call it) with --secrets-dir; the gateway needs jwt.key too (--jwt-secret-file).
            Containers that run as another user (docker-compose.yml's, uid 10001) read the files
            as they are on the host: make them readable (chmod 644) in a folder only you enter.
              hearth make-secrets --out secrets
            With --data-key FILE it also writes a new data key ring for safety there (kept when
            there): the file every safety process on one PostgreSQL shares (--data-key-file).
            """
    )

    @Option(help: "The folder to write into (made when missing).")
    var out: String

    @Option(help: "Also write a new data key ring for safety into this file, unless it is there.")
    var dataKey: String?

    func run() throws {
        let folder = URL(fileURLWithPath: self.out)
        let names = ProcessLink.all.map(\.fileName) + ["jwt.key"]
        var made: [String] = []
        for name in names {
            let url = folder.appendingPathComponent(name)
            let before = FileManager.default.fileExists(atPath: url.path)
            // Made as `hearth up` makes its own: never over a file that is there.
            _ = try SecretOptions.secret(environment: nil, file: nil, fallback: url, creating: true)
            if !before { made.append(name) }
        }
        if let dataKey = self.dataKey,
            try SecretOptions.create(at: URL(fileURLWithPath: dataKey), contents: DataKeyRing.generate().text)
        {
            made.append(dataKey)
        }
        print(
            made.isEmpty
                ? "\(folder.path): every secret was there already"
                : "\(folder.path): made \(made.joined(separator: ", "))"
        )
    }
}
