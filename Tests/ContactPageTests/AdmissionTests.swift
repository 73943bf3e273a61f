import Foundation
import HearthCore
import NIOCore
import Testing

@testable import HearthContactPage

/// The page's admission rules without sockets: whom a request counts against, the bounded table
/// of buckets, and the cap on requests asking safety at once. Time is passed in or a manual clock.
@Suite("Contact page admission")
struct AdmissionTests {
    static let start = Date(timeIntervalSince1970: 1_773_144_000)

    static func key(_ address: String) throws -> ClientKey {
        ClientKey(try SocketAddress(ipAddress: address, port: 4321))
    }

    @Test("IPv4 addresses are clients of their own; IPv6 ones count by /64; IPv4-mapped IPv6 is IPv4")
    func clientKeys() throws {
        #expect(try Self.key("127.0.0.1") != Self.key("127.0.0.2"))
        #expect(try Self.key("127.0.0.1").description == "127.0.0.1")
        #expect(try Self.key("2001:db8:1:2::1") == Self.key("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        #expect(try Self.key("2001:db8:1:2::1") != Self.key("2001:db8:1:3::1"))
        #expect(try Self.key("2001:db8:1:2::1").description == "2001:db8:1:2::/64")
        #expect(try Self.key("::ffff:192.0.2.1") == Self.key("192.0.2.1"))
        #expect(try Self.key("::ffff:192.0.2.1") != Self.key("::1"))
        // An IPv4 address and an IPv6 prefix of the same bits are not one client.
        #expect(try Self.key("0.0.0.1") != Self.key("0:0:0:1::"))
    }

    @Test("X-Forwarded-For: the last address of the last field, a port or brackets allowed; else nil")
    func forwardedFor() throws {
        #expect(try ClientKey(forwardedFor: ["203.0.113.1, 198.51.100.7"]) == Self.key("198.51.100.7"))
        #expect(try ClientKey(forwardedFor: ["203.0.113.1", "198.51.100.7 "]) == Self.key("198.51.100.7"))
        #expect(try ClientKey(forwardedFor: ["198.51.100.7:5555"]) == Self.key("198.51.100.7"))
        #expect(try ClientKey(forwardedFor: ["[2001:db8::1]:443"]) == Self.key("2001:db8::2"))
        #expect(try ClientKey(forwardedFor: ["2001:db8::1"]) == Self.key("2001:db8::2"))
        for bad in [[], [""], ["unknown"], ["198.51.100.7, "], ["198.51.100.300"], ["example.com"]] {
            #expect(ClientKey(forwardedFor: bad) == nil, "\(bad)")
        }
    }

    @Test("a bucket lets `burst` requests through at once, then one each 1/rate seconds")
    func bucketBoundary() throws {
        var buckets = AddressBuckets(capacity: 10, perSecond: 0.5, burst: 10)
        let client = try Self.key("192.0.2.1")
        for _ in 0..<10 { #expect(buckets.take(client, now: Self.start) == nil) }
        #expect(buckets.take(client, now: Self.start) == 2)
        #expect(buckets.take(client, now: Self.start.addingTimeInterval(1)) == 1)
        #expect(buckets.take(client, now: Self.start.addingTimeInterval(2)) == nil)
        #expect(buckets.take(client, now: Self.start.addingTimeInterval(2)) == 2)
        #expect(buckets.take(try Self.key("192.0.2.2"), now: Self.start) == nil, "another client, its own bucket")
    }

    @Test("a full table gives the place of the client idle longest to a new one; a busy client keeps its bucket")
    func evictsTheIdlest() throws {
        var buckets = AddressBuckets(capacity: 3, perSecond: 0.001, burst: 1)
        let (a, b, c, d) = try (
            Self.key("192.0.2.1"), Self.key("192.0.2.2"), Self.key("192.0.2.3"), Self.key("192.0.2.4")
        )
        for client in [a, b, c] { #expect(buckets.take(client, now: Self.start) == nil) }
        #expect(buckets.take(a, now: Self.start) != nil, "a is over, and now the most recently seen")
        #expect(buckets.take(d, now: Self.start) == nil)
        #expect(buckets.count == 3 && !buckets.contains(b) && buckets.contains(a))
        #expect(buckets.take(a, now: Self.start) != nil, "a, still seen, is still over")
        // b comes back as new (a full bucket), in c's place: c was idle longest.
        #expect(buckets.take(b, now: Self.start) == nil)
        #expect(buckets.count == 3 && !buckets.contains(c) && buckets.contains(d))
    }

    @Test("however many addresses come, the table holds at most its capacity")
    func boundedTable() throws {
        var buckets = AddressBuckets(capacity: 1000, perSecond: 0.5, burst: 10)
        for index in 0..<20_000 {
            _ = buckets.take(ClientKey(ipv4: UInt32(index)), now: Self.start)
            #expect(buckets.count == min(index + 1, 1000))
        }
        for index in 19_000..<20_000 { #expect(buckets.contains(ClientKey(ipv4: UInt32(index)))) }
    }

    @Test("past the cap in flight a request is refused as busy and takes no token; a finished one frees a place")
    func inFlightCap() throws {
        let clock = ManualClock(Self.start)
        let admission = Admission(limits: ContactPage.Limits(perMinute: 30, burst: 3, maxInFlight: 2), clock: clock)
        let client = try Self.key("192.0.2.1")
        #expect(admission.admit(client) == nil)
        #expect(admission.admit(client) == nil)
        #expect(admission.admit(client) == .busy)
        #expect(admission.admit(try Self.key("192.0.2.2")) == .busy, "the cap is over every client")
        admission.finished()
        #expect(admission.admit(client) == nil, "the busy refusals took no token: the third is still there")
        admission.finished()
        #expect(admission.admit(client) == .rate(retryAfter: 2))
        clock.advance(by: 2)
        #expect(admission.admit(client) == nil)
        #expect(admission.clients == 1)
    }
}
