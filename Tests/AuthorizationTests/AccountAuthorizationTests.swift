import Foundation
import HearthContracts
import HearthCore
import HearthRPC
import HearthTestSupport
import SwiftProtobuf
import Synchronization
import TasksService
import Testing

/// hearth.account.v1.Account as each kind of caller meets it, on every service's real file behind
/// real TCP (``AccountErasureTests``' helpers). The matrix calls its methods as every role too.
///
/// An app reaches Hearth only through the gateway, which names the caller's user itself (a client's
/// `x-hearth-*` metadata is dropped) and refuses every method whose contract says "Internal"
/// (GatewaySettings.servicesOnly: OptionsTests checks it against the .proto files, GatewayTests
/// that those are answered PERMISSION_DENIED and never forwarded). This target links no gateway,
/// so here: the account's methods are not Internal; every method it calls in other services is.
@Suite("Account service authorization", .timeLimit(.minutes(2)))
struct AccountAuthorizationTests {
    static let secret = AccountErasureTests.secret
    static let marker = AuthorizationMatrixTests.marker
    /// What an app may call.
    static let accountMethods = Hearth_Account_V1_Account.info.methods
    /// What the account service calls in the other services, for an erasure and an export.
    static let peerMethods: Set<String> = [
        Hearth_Checkins_V1_Checkins.Method.listOwnedNests.name,
        Hearth_Checkins_V1_Checkins.Method.eraseUser.name,
        Hearth_Checkins_V1_Checkins.Method.exportUser.name,
        Hearth_Routines_V1_Routines.Method.eraseUser.name,
        Hearth_Routines_V1_Routines.Method.exportUser.name,
        Hearth_Safety_V1_Safety.Method.eraseUser.name,
        Hearth_Safety_V1_Safety.Method.exportUser.name,
    ]
    /// Fields 1 to 15, each the string "olivia": what a client guessing at a field that names a
    /// user would send.
    static let smuggled: Data = {
        var payload = Data()
        for field in 1...15 {
            payload.append(UInt8(field << 3 | 2))
            payload.append(UInt8("olivia".utf8.count))
            payload.append(contentsOf: "olivia".utf8)
        }
        return payload
    }()

    @Test(
        "the account's methods act on the acting user alone: no request names a user, fields slipped in are ignored, every call made for them carries them and is Internal"
    )
    func actingUserAlone() async throws {
        try await withScratchFolder("hearth-account-authz") { folder in
            let services = try AccountErasureTests.Services(folder: folder, now: Date())
            let log = CallLog()
            try await AccountErasureTests.withServices(services, interceptors: [log]) { client in
                let ids = try await AuthorizationMatrixTests.seed(client, now: services.clock.now())
                let checkins = Hearth_Checkins_V1_Checkins.Client(client)
                let mallorys = try await checkins.createNest(
                    .with { $0.name = "MALLORY-OWN home" },
                    options: Self.options("mallory")
                )
                try await AccountErasureTests.withAccount(
                    services,
                    checkins: client,
                    routines: client,
                    safety: client
                ) { account in
                    // No request can name a user: each is empty; a user field, or any of 1-15, is not one of theirs.
                    for method in Self.accountMethods {
                        #expect(method.requestShape == "{}" && !method.servicesOnly, "\(method.name)")
                        #expect(throws: (any Error).self, "\(method.name)") {
                            _ = try method.requestType.init(jsonString: #"{"userId": "olivia"}"#)
                        }
                        let decoded = try method.requestType.init(serializedBytes: Self.smuggled)
                        #expect(decoded.unknownFields.data == Self.smuggled, "\(method.name): all of it unknown")
                    }
                    let olivias = Self.contents(try await account.exportAccount(options: Self.options("olivia")))
                    #expect(olivias["nests"] == [ids.nest] && olivias["tasks"] == [ids.task])
                    #expect(olivias["routines"] == [ids.routine] && olivias["contacts"] == [ids.contact])
                    _ = log.take()

                    // Mallory, every request saying "olivia" as well as it can: her own account, only.
                    await expectCode(.notFound) {
                        _ = try await Self.smuggling(
                            Hearth_Account_V1_Account.Method.getErasure.name,
                            "mallory",
                            account
                        )
                    }
                    let export = try Hearth_Account_V1_AccountExport(
                        serializedBytes: try await Self.smuggling(
                            Hearth_Account_V1_Account.Method.exportAccount.name,
                            "mallory",
                            account
                        )
                    )
                    #expect(Self.contents(export)["nests"] == [mallorys.id])
                    let json = try export.jsonString()
                    let oliviasIDs = ids.all.filter { !$0.isEmpty && json.contains($0) }
                    #expect(!json.contains(Self.marker) && oliviasIDs.isEmpty, "\(json)")
                    let erasure = try Hearth_Account_V1_Erasure(
                        serializedBytes: try await Self.smuggling(
                            Hearth_Account_V1_Account.Method.eraseAccount.name,
                            "mallory",
                            account
                        )
                    )
                    #expect(erasure.services.map(\.service) == ["checkins", "tasks", "safety", "routines"])
                    try await eventually("mallory's erasure is done") {
                        services.clock.advance(by: 1)
                        return try await account.getErasure(options: Self.options("mallory")).done
                    }
                    let called = log.take()
                    #expect(try await checkins.listMyNests(.init(), options: Self.options("mallory")).nests.isEmpty)

                    // Olivia asked for nothing, and has everything she had.
                    await expectCode(.notFound) { _ = try await account.getErasure(options: Self.options("olivia")) }
                    #expect(Self.contents(try await account.exportAccount(options: Self.options("olivia"))) == olivias)

                    // What the account service asked of the others: Internal methods (which the gateway
                    // refuses to apps), each for the acting user and no one else.
                    let servicesOnly = Set(Contracts.services.flatMap(\.methods).filter(\.servicesOnly).map(\.name))
                    #expect(Set(called.map(\.method)) == Self.peerMethods, "\(called)")
                    #expect(Self.peerMethods.isSubset(of: servicesOnly))
                    #expect(called.allSatisfy { $0.user == "mallory" }, "\(called)")

                    // The sitter: the nest they sit in, their session and check-in (shared with them),
                    // nothing else of the owner's: no quick caption, task, safety data or routine.
                    let sams = try await account.exportAccount(options: Self.options("sam"))
                    let samsContents = Self.contents(sams)
                    #expect(samsContents["nests"] == [ids.nest] && samsContents["checkIns"] == [ids.checkIn])
                    #expect(samsContents["templates"] == [] && samsContents["routines"] == [])
                    for part in [
                        try sams.tasks.jsonString(), try sams.safety.jsonString(), try sams.routines.jsonString(),
                    ] {
                        #expect(!part.contains(Self.marker), "\(part)")
                    }
                }
            }
        }
    }

    @Test(
        "without the internal credential, with a wrong one, or with it naming no user, every account method and every method it calls is refused UNAUTHENTICATED; nothing is erased"
    )
    func unauthenticated() async throws {
        try await withScratchFolder("hearth-account-authz") { folder in
            let services = try AccountErasureTests.Services(folder: folder, now: Date())
            try await AccountErasureTests.withServices(services) { client in
                let ids = try await AuthorizationMatrixTests.seed(client, now: services.clock.now())
                try await AccountErasureTests.withAccount(
                    services,
                    checkins: client,
                    routines: client,
                    safety: client
                ) { account in
                    // The credential with a user (the gateway's forwarded call, or another service's): what
                    // that user may do, the Internal methods too.
                    let olivias = Self.contents(try await account.exportAccount(options: Self.options("olivia")))
                    #expect(olivias["nests"] == [ids.nest] && olivias["contacts"] == [ids.contact])
                    let safetys = try await Hearth_Safety_V1_Safety.Client(client).exportUser(
                        .init(),
                        options: Self.options("olivia")
                    )
                    #expect(safetys.profile.name == "\(Self.marker) Olivia")

                    let callers: [(String, [String: String])] = [
                        ("an anonymous caller", [:]),
                        ("a user named without the credential", [TrustedMetadata.user: "olivia"]),
                        (
                            "a wrong credential",
                            [TrustedMetadata.credential: "not-\(Self.secret)", TrustedMetadata.user: "olivia"]
                        ),
                        ("the credential naming no user", [TrustedMetadata.credential: Self.secret]),
                        (
                            "the credential naming an empty user",
                            [TrustedMetadata.credential: Self.secret, TrustedMetadata.user: ""]
                        ),
                    ]
                    for (caller, metadata) in callers {
                        let options = CallOptions(timeout: .seconds(10), metadata: metadata)
                        for method in Self.accountMethods.map(\.name) {
                            let code = await Self.code {
                                _ = try await account.rpc.callRaw(method, payload: Data(), options: options)
                            }
                            #expect(code == .unauthenticated, "\(method) as \(caller)")
                        }
                        // What it calls, straight at the services (as an app that reached their port would).
                        for method in Self.peerMethods.sorted() {
                            let code = await Self.code {
                                _ = try await client.callRaw(method, payload: Data(), options: options)
                            }
                            #expect(code == .unauthenticated, "\(method) as \(caller)")
                        }
                    }

                    // No erasure was recorded or made: Olivia has everything she had.
                    await expectCode(.notFound) { _ = try await account.getErasure(options: Self.options("olivia")) }
                    #expect(Self.contents(try await account.exportAccount(options: Self.options("olivia"))) == olivias)
                    #expect(try services.files(holding: Self.marker).count >= 3, "checkins, tasks and routines keep it")
                }
            }
        }
    }

    // MARK: Helpers

    static func options(_ user: String) -> CallOptions { AccountErasureTests.options(user) }

    /// `method` of the account service called as `user` with ``smuggled`` for a request; its answer.
    static func smuggling(_ method: String, _ user: String, _ account: Hearth_Account_V1_Account.Client)
        async throws -> Data
    {
        try await account.rpc.callRaw(method, payload: Self.smuggled, options: Self.options(user))
    }

    /// The code `body` failed with; nil when it succeeded.
    static func code(of body: () async throws -> Void) async -> StatusCode? {
        do {
            try await body()
            return nil
        } catch {
            return RPCError(answering: error).code
        }
    }

    /// The ids (the profile: its name) of everything `export` holds, by kind.
    static func contents(_ export: Hearth_Account_V1_AccountExport) -> [String: [String]] {
        [
            "nests": export.checkins.nests.map(\.id),
            "sessions": export.checkins.sessions.map(\.id),
            "checkIns": export.checkins.checkIns.map(\.id),
            "templates": export.checkins.templates.map(\.id),
            "tasks": export.tasks.tasks.map(\.id),
            "prompts": export.tasks.prompts.map(\.id),
            "activities": export.tasks.activities.map(\.id),
            "offers": export.tasks.offers.map(\.offerID),
            "profile": export.safety.hasProfile ? [export.safety.profile.name] : [],
            "contacts": export.safety.contacts.map(\.id),
            "routines": export.routines.routines.map(\.id),
            "ticks": export.routines.ticks.map(\.actionID),
        ]
    }
}

extension AuthorizationMatrixTests {
    /// The account service as the tasks process serves it (sharing `tasks`' store), asking the
    /// others through `peers`, on a server of its own for the duration of `body`, with a client to
    /// that server. No erasure worker runs: an EraseAccount does tasks' part and leaves the others'
    /// pending.
    static func withAccountServer<T>(
        sharing tasks: TasksService,
        peers: RPCClient,
        _ body: (_ service: AccountService, _ client: RPCClient) async throws -> T
    ) async throws -> T {
        let account = AccountService(
            sharingStoreOf: tasks,
            peers: AccountPeers(
                checkins: peers,
                routines: peers,
                safety: peers,
                credentials: .init(checkins: Self.secret, routines: Self.secret, safety: Self.secret)
            )
        )
        let configuration = ServerConfiguration(callers: .anyMethod(Self.secret))
        return try await withServer(configuration: configuration, services: [account]) { _, port in
            try await withClient(port: port) { client in try await body(account, client) }
        }
    }
}

/// Records every call a server serves: its method and the user it acts for.
final class CallLog: ServerInterceptor {
    struct Call: Sendable, CustomStringConvertible {
        var method: String
        var user: String
        var description: String { "\(self.method) for \(self.user)" }
    }

    private let calls = Mutex<[Call]>([])

    func intercept(_ payload: Data, context: RPCContext, next: RawHandler) async throws -> Data {
        self.calls.withLock { $0.append(Call(method: context.method, user: context.userID ?? "")) }
        return try await next(payload, context)
    }

    /// The calls recorded since the last take.
    func take() -> [Call] {
        self.calls.withLock { calls in
            defer { calls = [] }
            return calls
        }
    }
}
