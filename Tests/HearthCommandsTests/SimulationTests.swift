import Foundation
import HearthTestSupport
import Testing

@testable import HearthBench

@Suite("The simulated day")
struct DayScheduleTests {
    static let profile = UsageProfile(
        callsPerUserPerDay: [.recordHeartbeat: 4, .createPhotoCheckIn: 0.5, .getStatus: 0],
        hourlyWeights: [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 3]
    )

    @Test("each user makes the whole part of each count, and one more with the fraction's probability")
    func counts() {
        let day = DaySchedule(profile: Self.profile, users: 2000, seed: 7)
        let heartbeats = day.calls.filter { $0.call == .recordHeartbeat }
        #expect(heartbeats.count == 8000)
        #expect(Dictionary(grouping: heartbeats, by: \.user).values.allSatisfy { $0.count == 4 })
        let photos = day.calls.filter { $0.call == .createPhotoCheckIn }.count
        // 2,000 draws at one half: 1,000 expected, standard deviation about 22.
        #expect((880...1120).contains(photos), "\(photos)")
        #expect(!day.calls.contains { $0.call == .getStatus })
    }

    @Test("calls fall in the hours by their weights, in order of time, the same for the same seed")
    func spread() {
        let day = DaySchedule(profile: Self.profile, users: 2000, seed: 7)
        #expect(day.calls.map(\.at) == day.calls.map(\.at).sorted())
        #expect(!day.calls.contains { (0..<6 * 3600).contains($0.at) || (22 * 3600..<23 * 3600).contains($0.at) })
        // Hour 23 weighs 3 of 19: of about 9,000 calls, 1,421 expected, standard deviation 35.
        let lastHour = Double(day.counts(perHour: 23).values.reduce(0, +))
        let expected = Double(day.calls.count) * 3 / 19
        #expect(abs(lastHour - expected) < 5 * (expected * 16 / 19).squareRoot(), "\(lastHour) against \(expected)")
        #expect(DaySchedule(profile: Self.profile, users: 2000, seed: 7).calls == day.calls)
        #expect(DaySchedule(profile: Self.profile, users: 2000, seed: 8).calls != day.calls)
    }

    @Test("a window keeps only its hours' calls, and the same calls in them as the whole day")
    func window() {
        let whole = DaySchedule(profile: Self.profile, users: 300, seed: 3)
        let evening = DaySchedule(profile: Self.profile, users: 300, fromHour: 18, hours: 4, seed: 3)
        #expect(evening.window == 18 * 3600.0..<22 * 3600.0)
        #expect(evening.calls == whole.calls.filter { evening.window.contains($0.at) })
        #expect(!evening.calls.isEmpty)
    }

    @Test("the profile's peak factor is the busiest hour over the mean hour")
    func peakFactor() {
        #expect(abs(Self.profile.peakFactor - 3 * 24 / 19) < 1e-9)
    }

    @Test(
        "a profile naming an unknown call, without 24 hours, or with a negative count is refused, naming the fault",
        arguments: [
            (
                #"{"callsPerUserPerDay": {"safety.Heartbeat": 1}, "hourlyWeights": \#(Array(repeating: 1, count: 24))}"#,
                "unknown call safety.Heartbeat"
            ),
            (#"{"callsPerUserPerDay": {}, "hourlyWeights": [1, 2, 3]}"#, "needs 24 values"),
            (#"{"callsPerUserPerDay": {}, "hourlyWeights": \#(Array(repeating: 0, count: 24))}"#, "not all zero"),
            (
                #"{"callsPerUserPerDay": {"safety.GetStatus": -1}, "hourlyWeights": \#(Array(repeating: 1, count: 24))}"#,
                "not negative"
            ),
        ]
    )
    func invalidProfiles(json: String, fault: String) {
        #expect {
            _ = try JSONDecoder().decode(UsageProfile.self, from: Data(json.utf8))
        } throws: { error in
            "\(error)".contains(fault)
        }
    }

    @Test("the repository's profile reads, and names every kind of call the simulation makes")
    func repositoryProfile() throws {
        let profile = try UsageProfile.load(
            path: repositoryRoot.appendingPathComponent("deploy/capacity/usage-profile.json").path
        )
        #expect(Set(profile.callsPerUserPerDay.keys) == Set(SimulatedCall.allCases))
    }
}

@Suite("A server's CPU time per call")
struct ProcessCPUTimeTests {
    @Test("read from /proc/PID/stat after the last parenthesis: a name may hold spaces and parentheses")
    func parse() {
        let line = "1234 (hearth (serve) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 8 0 77 0 0"
        #expect(ProcessCPUTime.parse(stat: line, ticksPerSecond: 100) == .milliseconds(4000))
        #expect(ProcessCPUTime.parse(stat: "1234 (short) S 1", ticksPerSecond: 100) == nil)
    }

    @Test("this process's CPU time reads and grows; a process that is not there reads nil")
    func read() {
        let me = ProcessCPUTime(pid: getpid())
        let before = me.read()
        var x: UInt64 = 1
        for i in 0..<50_000_000 { x = x &* 6_364_136_223_846_793_005 &+ UInt64(i) }
        #expect(x != 0)
        let after = me.read()
        #expect(before != nil && after != nil && after! > before!)
        #expect(ProcessCPUTime(pid: Int32.max).read() == nil)
    }
}

@Suite("hearth simulate-day refuses what it cannot run")
struct SimulateDayRefusalTests {
    @Test(
        "an unreadable or invalid profile, a missing photo, a replay longer than a token's day: each named",
        arguments: [
            (["--profile", "/nonexistent/profile.json"], "cannot read --profile /nonexistent/profile.json"),
            (
                ["--profile", "PROFILE", "--photo", "/nonexistent/photo.jpg"],
                "cannot read --photo /nonexistent/photo.jpg"
            ),
            (["--profile", "PROFILE"], "the profile has check-ins with a photo: give --photo FILE"),
            (["--profile", "PROFILE", "--speedup", "1"], "the replay would last 86400 s; at most 85000 s"),
            (["--profile", "INVALID"], "is not a usage profile: hourlyWeights needs 24 values"),
        ]
    )
    func refusals(arguments: [String], message: String) async throws {
        let invalid = FileManager.default.temporaryDirectory.appendingPathComponent("profile-\(UUID()).json")
        try Data(#"{"callsPerUserPerDay": {}, "hourlyWeights": [1]}"#.utf8).write(to: invalid)
        defer { try? FileManager.default.removeItem(at: invalid) }
        let profile = repositoryRoot.appendingPathComponent("deploy/capacity/usage-profile.json").path
        let run = try await runProcess(
            try builtProduct(named: "hearth"),
            ["simulate-day"] + arguments.map { $0 == "PROFILE" ? profile : $0 == "INVALID" ? invalid.path : $0 }
        )
        #expect(run.status != 0)
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }
}

/// scripts/simulate-day end to end: the processes as separate `hearth serve`s on free ports
/// (SPLIT=1), twelve users through a real gateway, a whole day in about ten seconds, every call
/// answered OK, the capacity model's prediction printed beside what was measured.
@Suite("simulate-day (short run)", .serialized, .timeLimit(.minutes(4)))
struct SimulateDayScriptTests {
    @Test("a day of 12 users replays through the gateway with every call OK, and the model is compared")
    func shortDay() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["HEARTH_BIN"] = try builtProduct(named: "hearth").path
        environment["SPLIT"] = "1"
        let run = try await runProcess(
            URL(fileURLWithPath: "/bin/bash"),
            [repositoryRoot.appendingPathComponent("scripts/simulate-day").path, "12", "8640"],
            environment: environment
        )
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        #expect(run.stdout.contains("12 users, hours 0-24 at 8640.0x"), "\(run.stdout)")
        // The script's summary line: no call failed.
        #expect(run.stdout.contains("; 0 failed; started late"), "\(run.stdout)")
        for process in ["gateway", "checkins", "tasks", "safety", "routines"] {
            #expect(run.stdout.contains("| \(process) |"), "\(process): \(run.stdout)")
        }
    }
}
