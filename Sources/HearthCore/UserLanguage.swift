import Foundation

/// The languages Hearth writes in: every text the server writes for a user (pushes, prompts,
/// offers, emails, the contact page) comes in each.
public enum UserLanguage: String, Sendable, CaseIterable, Hashable {
    case english = "en"
    case simplifiedChinese = "zh-Hans"
    case traditionalChinese = "zh-Hant"

    /// From an Accept-Language value (e.g. "zh-TW,zh;q=0.9,en;q=0.8"): zh-Hant for
    /// zh-TW/zh-HK/zh-MO/zh-Hant*, zh-Hans for zh-CN/zh-SG/zh-Hans*/plain zh, en for en*; the
    /// highest q wins; nil when none matches.
    ///
    /// A script subtag wins over a region (`zh-Hans-HK` is zh-Hans); any other `zh-` region is
    /// zh-Hans. Tags are case-insensitive and may use `_`. Of equal q-values the earlier wins; an
    /// item with q=0 (refused), an unreadable q, or `*` counts for nothing.
    public static func fromAcceptLanguage(_ header: String) -> UserLanguage? {
        var best: (language: UserLanguage, q: Double)?
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";")
            guard let tag = parts.first, let language = Self.language(ofTag: String(tag)) else { continue }
            var q = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "q" else {
                    continue
                }
                q = Double(pair[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
            // NaN fails this too.
            guard q > 0 else { continue }
            q = min(q, 1)
            if let current = best, q <= current.q { continue }
            best = (language, q)
        }
        return best?.language
    }

    /// One language tag ("zh-TW", "en_US", "zh-Hant-HK"), or nil when Hearth has no such language.
    private static func language(ofTag tag: String) -> UserLanguage? {
        let subtags = tag.trimmingCharacters(in: .whitespaces).lowercased()
            .split(whereSeparator: { $0 == "-" || $0 == "_" })
            .map(String.init)
        guard let primary = subtags.first else { return nil }
        switch primary {
        case "en":
            return .english
        case "zh":
            let rest = subtags.dropFirst()
            if rest.contains("hant") { return .traditionalChinese }
            if rest.contains("hans") { return .simplifiedChinese }
            if rest.contains(where: { $0 == "tw" || $0 == "hk" || $0 == "mo" }) { return .traditionalChinese }
            return .simplifiedChinese
        default:
            return nil
        }
    }
}

/// A service's texts for users: each key in each ``UserLanguage``, `{name}` marking where a value
/// goes. Kept as data, so that a test can hold every catalog to having each key in every language
/// with the same placeholders (``gaps``).
public struct TextCatalog<Key: Hashable & CaseIterable & Sendable>: Sendable {
    public let entries: [Key: [UserLanguage: String]]

    public init(_ entries: [Key: [UserLanguage: String]]) {
        self.entries = entries
    }

    /// `key` in `language` with each `{name}` replaced by `values[name]`; English if the catalog
    /// lacks it (never, in a tested catalog).
    public func text(_ key: Key, _ language: UserLanguage, _ values: [String: String] = [:]) -> String {
        let template = self.entries[key]?[language] ?? self.entries[key]?[.english] ?? ""
        return Self.filled(template) { values[$0] }
    }

    /// What is wrong with the catalog, for people: a key missing a language, a text that is
    /// empty, or languages of one key with different placeholders. Empty when it is whole.
    public var gaps: [String] {
        var gaps: [String] = []
        for key in Key.allCases {
            let texts = self.entries[key] ?? [:]
            var placeholders: Set<String>?
            for language in UserLanguage.allCases {
                guard let text = texts[language], !text.isEmpty else {
                    gaps.append("\(key) has no \(language.rawValue) text")
                    continue
                }
                let found = Self.placeholders(in: text)
                if let expected = placeholders, expected != found {
                    gaps.append(
                        "\(key) in \(language.rawValue) has placeholders \(found.sorted()), not \(expected.sorted())"
                    )
                }
                placeholders = placeholders ?? found
            }
        }
        return gaps
    }

    /// The `{name}`s in `text`.
    static func placeholders(in text: String) -> Set<String> {
        var names: Set<String> = []
        _ = Self.filled(text) { name in
            names.insert(name)
            return nil
        }
        return names
    }

    /// `template` with each `{name}` replaced by `value(name)`, or kept as it is when that is
    /// nil. One pass: a value that holds "{name}" itself stays as it is.
    static func filled(_ template: String, _ value: (String) -> String?) -> String {
        var text = ""
        var rest = template[...]
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            text += rest[..<open]
            text += value(String(rest[rest.index(after: open)..<close])) ?? String(rest[open...close])
            rest = rest[rest.index(after: close)...]
        }
        return text + rest
    }
}
