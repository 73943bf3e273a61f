import Foundation
import HearthContracts
import HearthRPC

// safety: each user's profile, then heartbeats and, every 20th write, an emergency contact.
//
// Safety merges a heartbeat that comes within 5 s of the user's last check-in into it (kept only
// as an uncounted row, 64 an hour at most, past which nothing is kept although the call answers
// OK), and counts at most 120 an hour (RESOURCE_EXHAUSTED past them). So a writer keeps a pool
// of users and sends each user's next heartbeat at least 6 s after their last one ended (a call
// that failed may still have been recorded), adding a user whenever none is ready, and retires a
// user after 100 heartbeats, or at a refusal it cannot rule out: every heartbeat it makes is then
// a check-in that safety keeps. The check finds each by its device info (ExportUser leaves the
// request id out), which each heartbeat sets to its request id.

/// A user of a safety writer.
private struct SafetyUser {
    let id: String
    let options: CallOptions
    /// When their next heartbeat may go.
    var readyAt: ContinuousClock.Instant
    var heartbeats = 0
    /// AddContact calls made for them, answered or not (a failed one may have added it).
    var contacts = 0
}

extension FaultRun {
    /// Heartbeats of a user more than this apart are each a check-in of their own.
    static let heartbeatSpacing = Duration.seconds(6)
    /// Heartbeats a user makes before the writer goes on with a new one: under the 120 an hour
    /// safety counts.
    static let heartbeatsPerUser = 100
    /// Contacts a user may have.
    static let contactsPerUser = 10

    /// Writer `writer`'s calls until the run ends: UpsertProfile for each of its users, then
    /// RecordHeartbeat, and every 20th write AddContact, for the user whose turn it is.
    func writeSafety(writer: Int) async throws -> [FaultWriter.Entry] {
        var log = CallLog()
        var users: [SafetyUser] = []
        // The user being added: the same one again after a failed UpsertProfile (which may have
        // stored the profile).
        var joining: (id: String, options: CallOptions)?
        var part = 0
        var n = 0
        while !self.isOver {
            let now = ContinuousClock.now
            guard let turn = users.indices.min(by: { users[$0].readyAt < users[$1].readyAt }),
                users[turn].readyAt <= now
            else {
                // Every user checked in less than 6 s ago: one more.
                let user: (id: String, options: CallOptions)
                if let joining {
                    user = joining
                } else {
                    let id = self.user(writer, part)
                    part += 1
                    let options = try await self.options(as: id)
                    user = (id, options)
                }
                let result = await log.record(.profile, user: user.id, id: user.id) {
                    try await Hearth_Safety_V1_Safety.Client(self.client).upsertProfile(
                        Self.profile(of: user.id),
                        options: user.options
                    )
                }
                if case .success = result {
                    users.append(SafetyUser(id: user.id, options: user.options, readyAt: ContinuousClock.now))
                    joining = nil
                } else {
                    joining = user
                }
                await self.pause(after: result)
                continue
            }
            n += 1
            let user = users[turn]
            if n % 20 == 0, user.contacts < Self.contactsPerUser {
                var request = Hearth_Safety_V1_AddContactRequest()
                request.email = "contact-\(self.id)-\(writer)-\(n)@fault.example"
                request.name = "Contact \(n)"
                let result = await log.record(.contact, user: user.id, id: \Hearth_Safety_V1_Contact.id) {
                    try await Hearth_Safety_V1_Safety.Client(self.client).addContact(request, options: user.options)
                }
                users[turn].contacts += 1
                // A refusal (no more contacts, or invitations, for this user) ends their contacts.
                if case .failure(let error) = result, error.code != .unavailable {
                    users[turn].contacts = Self.contactsPerUser
                }
                await self.pause(after: result)
                continue
            }
            var request = Hearth_Safety_V1_RecordHeartbeatRequest()
            request.clientRequestID = "fault-\(self.id)-\(writer)-\(n)"
            request.deviceInfo = request.clientRequestID
            request.timeZone = "UTC"
            let result = await log.record(.heartbeat, user: user.id, id: request.clientRequestID) {
                try await Hearth_Safety_V1_Safety.Client(self.client).recordHeartbeat(request, options: user.options)
            }
            users[turn].readyAt = ContinuousClock.now + Self.heartbeatSpacing
            users[turn].heartbeats += 1
            // Over the hourly limit, or a call that ran out of time (it may be recorded later,
            // closer to the next than 6 s): the writer goes on without this user.
            var retire = users[turn].heartbeats >= Self.heartbeatsPerUser
            if case .failure(let error) = result, error.code != .unavailable { retire = true }
            if retire { users.remove(at: turn) }
            await self.pause(after: result)
        }
        return log.entries
    }

    private static func profile(of user: String) -> Hearth_Safety_V1_UpsertProfileRequest {
        var profile = Hearth_Safety_V1_UpsertProfileRequest()
        profile.name = "Fault \(user)"
        profile.email = "\(user)@fault.example"
        profile.thresholdHours = 72
        profile.preferredLanguage = "en"
        profile.timeZone = "UTC"
        return profile
    }
}

extension FaultCheck {
    /// Whether `user`'s acknowledged profile, heartbeats and contacts are stored: the profile and
    /// the check-ins (by device info) from safety's ExportUser, called directly; the contacts from
    /// ListContacts, through the gateway as the user.
    func safety(
        of user: String,
        acknowledged: [FaultWriter.Kind: Set<String>],
        into verdict: inout FaultVerdict
    ) async throws {
        guard let direct = self.direct else {
            throw RPCError(.failedPrecondition, "reading safety's heartbeats needs its address (--direct)")
        }
        let export = try await Self.retryingUnanswered {
            try await Hearth_Safety_V1_Safety.Client(direct).exportUser(
                Hearth_Safety_V1_ExportUserRequest(),
                options: self.internalOptions(as: user)
            )
        }
        verdict.check(
            .profile,
            acknowledged: acknowledged[.profile] ?? [],
            stored: export.hasProfile ? [export.profile.userID] : []
        )
        verdict.check(
            .heartbeat,
            acknowledged: acknowledged[.heartbeat] ?? [],
            stored: Set(export.checkIns.filter { $0.source == "app" }.map(\.deviceInfo))
        )
        guard let contacts = acknowledged[.contact], !contacts.isEmpty else { return }
        let listed = try await Self.retryingUnanswered {
            try await Hearth_Safety_V1_Safety.Client(self.client).listContacts(
                Hearth_Safety_V1_ListContactsRequest(),
                options: try await self.options(as: user)
            )
        }
        verdict.check(.contact, acknowledged: contacts, stored: Set(listed.contacts.map(\.id)))
    }
}
