import Foundation
import HearthContracts
import HearthRPC
import SwiftProtobuf

/// Confirms contacts as they would: from the Confirm link in each invitation an SMTP sink kept
/// (a folder of JSON files, each with the decoded `body`), through safety's AnswerContactLink,
/// as the contact page does. For the benchmarks, whose switches must be armed.
struct InvitationConfirmer {
    let folder: String
    let secret: String
    /// How long the invitations may take to arrive.
    var limit: Duration = .seconds(300)

    struct Missing: Error, CustomStringConvertible {
        var confirmed: Int
        var expected: Int
        var description: String { "only \(self.confirmed) of \(self.expected) invitations arrived" }
    }

    /// Confirms invitations as they arrive until `count` new ones are.
    func confirm(count: Int, client: RPCClient) async throws {
        let safety = Hearth_Safety_V1_Safety.Client(client)
        let options = CallOptions(timeout: .seconds(30), metadata: [TrustedMetadata.credential: self.secret])
        var seen: Set<String> = []
        var confirmed = 0
        let end = ContinuousClock.now + self.limit
        while confirmed < count {
            guard ContinuousClock.now < end else { throw Missing(confirmed: confirmed, expected: count) }
            let files = try FileManager.default.contentsOfDirectory(atPath: self.folder)
                .filter { $0.hasSuffix(".json") && !seen.contains($0) }
            if files.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
            for file in files {
                seen.insert(file)
                let data = try Data(contentsOf: URL(fileURLWithPath: self.folder).appendingPathComponent(file))
                let body = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["body"] as? String ?? ""
                guard let token = Self.confirmToken(in: body) else { continue }
                let link = try await safety.answerContactLink(
                    .with {
                        $0.token = token
                        $0.action = .confirm
                    },
                    options: options
                )
                // An earlier run's invitation in the same folder was answered already.
                if link.outcome == .linkOk { confirmed += 1 }
            }
        }
    }

    /// The token of the Confirm link in an invitation's body.
    static func confirmToken(in body: String) -> String? {
        guard let start = body.range(of: "/contact/confirm?t=")?.upperBound else { return nil }
        return String(body[start...].prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
    }
}
