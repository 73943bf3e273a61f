import SwiftProtobuf
import SwiftProtobufPluginLibrary

/// A message's JSON shape as `hearth call` takes it (protobuf's JSON mapping), one field a line,
/// each under its `.proto` comment:
///
///     {
///       // Where the contact is reached.
///       "email": string,
///       "until": "2026-11-27T09:00:00Z" (RFC 3339 timestamp)
///     }
enum RequestShape {
    static func render(_ message: Descriptor) -> String {
        var lines: [String] = []
        self.object(message, indent: "", visiting: [], into: &lines, suffix: "")
        return lines.joined(separator: "\n")
    }

    /// `message`'s fields between braces; the closing brace takes `suffix` (a comma).
    private static func object(
        _ message: Descriptor,
        indent: String,
        visiting: [String],
        into lines: inout [String],
        suffix: String
    ) {
        guard !message.fields.isEmpty else {
            lines.append("{}" + suffix)
            return
        }
        lines.append("{")
        let inner = indent + "  "
        for (index, field) in message.fields.enumerated() {
            let comment = field.comment()
            for line in comment.split(separator: "\n", omittingEmptySubsequences: false) where !comment.isEmpty {
                lines.append(line.isEmpty ? inner + "//" : inner + "// " + line)
            }
            let comma = index == message.fields.count - 1 ? "" : ","
            let key = "\(inner)\"\(field.jsonName ?? field.name)\": "
            self.value(of: field, key: key, indent: inner, visiting: visiting + [message.fullName], into: &lines)
            lines[lines.count - 1] += comma + self.note(field)
        }
        lines.append(indent + "}" + suffix)
    }

    /// The field's value after `key`: a scalar on the key's line, a message or a list over more.
    private static func value(
        of field: FieldDescriptor,
        key: String,
        indent: String,
        visiting: [String],
        into lines: inout [String]
    ) {
        if field.isMap {
            let entry = field.messageType!
            let keyShape = self.scalar(entry.fields[0])
            lines.append(key + "{ \(keyShape): ")
            self.single(entry.fields[1], prefix: "", indent: indent, visiting: visiting, into: &lines)
            lines[lines.count - 1] += ", ... }"
        } else if field.isRepeated {
            lines.append(key + "[")
            self.single(field, prefix: "", indent: indent, visiting: visiting, into: &lines)
            lines[lines.count - 1] += ", ... ]"
        } else {
            self.single(field, prefix: key, indent: indent, visiting: visiting, into: &lines)
        }
    }

    /// One value of `field` (one element when it repeats), its first line starting with `prefix`.
    private static func single(
        _ field: FieldDescriptor,
        prefix: String,
        indent: String,
        visiting: [String],
        into lines: inout [String]
    ) {
        guard field.type == .message || field.type == .group, let message = field.messageType else {
            self.appendInline(self.scalar(field), prefix: prefix, into: &lines)
            return
        }
        if let wellKnown = self.wellKnown[message.fullName] {
            self.appendInline(wellKnown, prefix: prefix, into: &lines)
        } else if visiting.contains(message.fullName) {
            self.appendInline("{ ... } (a \(message.fullName), as above)", prefix: prefix, into: &lines)
        } else {
            var nested: [String] = []
            self.object(message, indent: indent, visiting: visiting, into: &nested, suffix: "")
            self.appendInline(nested[0], prefix: prefix, into: &lines)
            lines += nested.dropFirst()
        }
    }

    /// Appends `text` to the line being written (`prefix` non-empty or a list opened), else as a
    /// line of its own.
    private static func appendInline(_ text: String, prefix: String, into lines: inout [String]) {
        if prefix.isEmpty, let last = lines.last, last.hasSuffix("[") || last.hasSuffix(": ") {
            lines[lines.count - 1] += (last.hasSuffix("[") ? " " : "") + text
        } else {
            lines.append(prefix + text)
        }
    }

    /// What a scalar field holds.
    private static func scalar(_ field: FieldDescriptor) -> String {
        switch field.type {
        case .string: "string"
        case .bool: "true | false"
        case .bytes: "base64 string"
        case .double, .float: "number"
        case .int32, .sint32, .sfixed32, .uint32, .fixed32: "integer"
        case .int64, .sint64, .sfixed64, .uint64, .fixed64: "integer (or a string of one)"
        case .enum: field.enumType.values.map { "\"\($0.name)\"" }.joined(separator: " | ")
        case .message, .group: field.messageType.fullName
        @unknown default: "value"
        }
    }

    /// Presence and oneof membership, as a comment after the value.
    private static func note(_ field: FieldDescriptor) -> String {
        if let oneof = field.realContainingOneof {
            return "  // one of \(oneof.name): " + oneof.fields.map { $0.jsonName ?? $0.name }.joined(separator: ", ")
        }
        return field.hasPresence && field.type != .message ? "  // optional: left out means unset" : ""
    }

    /// The well-known types, as their JSON mapping writes them.
    private static let wellKnown: [String: String] = [
        "google.protobuf.Timestamp": "\"2026-11-27T09:00:00Z\" (RFC 3339 timestamp)",
        "google.protobuf.Duration": "\"1.5s\" (duration)",
        "google.protobuf.Empty": "{}",
    ]
}
