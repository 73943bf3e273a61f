import Foundation
import HearthCommandLine
import HearthStore

extension SecretOptions {
    /// The data key file safety uses: the one named by `--data-key-file`, which must exist, else
    /// DATA/secrets/data.key, made with a new ring when missing (what `hearth up` relies on).
    func dataKeyFile(dataDirectory: URL) throws -> URL {
        if let named = self.dataKeyFile { return URL(fileURLWithPath: named) }
        let fallback = dataDirectory.appendingPathComponent("secrets/data.key")
        _ = try Self.create(at: fallback, contents: DataKeyRing.generate().text)
        return fallback
    }
}
