import HearthCore

/// What checkins writes for people: the push to a nest's owner when their sitter posts a check-in,
/// in the owner's language (kept on the session when the owner created it).
enum CheckinText: CaseIterable, Sendable {
    case newCheckInTitle
    case photoPosted
    case captioned

    static let catalog = TextCatalog<CheckinText>([
        .newCheckInTitle: [.english: "New check-in", .simplifiedChinese: "新的照护动态", .traditionalChinese: "新的照護動態"],
        .photoPosted: [
            .english: "Your sitter posted a photo.",
            .simplifiedChinese: "您的保姆发布了一张照片。",
            .traditionalChinese: "您的保母發布了一張照片。",
        ],
        .captioned: [
            .english: "Your sitter: {caption}",
            .simplifiedChinese: "您的保姆：{caption}",
            .traditionalChinese: "您的保母：{caption}",
        ],
    ])
}
