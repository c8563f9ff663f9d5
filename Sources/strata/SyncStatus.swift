import ArgumentParser
import Foundation
import Strata

extension StrataCommand {
    struct SyncStatusCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync-status",
            abstract: "Show a sync-enabled file's site, clock, peers, pending changes and learned fields.",
            discussion: """
                The site is the file's identity as an origin of changes; the clock is its hybrid \
                logical clock (milliseconds since 1970 and a counter, then as a date). Each peer \
                is a file or a hub it has applied changes from (a hub's site is its epoch): its cursor \
                (how far this file has the peer's changes), the last contact, this file's sequence \
                number up to which the peer has acknowledged every change (what the last exchange \
                found a file to have; what a hub's last answer said it has), and how many objects \
                the peer has yet to receive from this file (those whose last change here, made or \
                relayed, is after that). Pending is the highest of those (every object \
                in the change log when there is no peer). Kept types and fields are \
                the ones the file stores without its app declaring them: learned from peers on \
                newer app versions, or removed by a newer app; they are sent on, and read at once \
                by an app version that declares them. Reads every object's clock: O(objects).
                """
        )

        @OptionGroup var options: FileOptions

        func run() throws {
            let db = try Database(syncingExisting: options.file, readOnly: true)
            defer { db.close() }
            print(options.file)
            for line in SyncStatusCommand.lines(try db.sync.status()) { print(line) }
        }

        /// The status as lines, each item indented by `indent`.
        static func lines(_ status: SyncStatus, indent: String = "") -> [String] {
            var lines = [
                "Site: \(status.site)",
                "Dataset: \(status.dataset)",
                "Clock: \(status.clock.milliseconds) ms, counter \(status.clock.counter) (\(timestamp(status.clockDate)))",
                "Sync enabled at: \(timestamp(milliseconds: status.enabledAt.milliseconds))",
                "Last sequence number: \(status.lastSequenceNumber)",
                "Objects: \(status.objects) alive, \(plural(status.tombstones, "tombstone"))",
                "Changed here: \(plural(status.changedHere, "object"))",
                "Pending: \(plural(status.pendingObjects, "object")) "
                    + (status.peers.isEmpty ? "(no peer yet)" : "not yet sent to the least up-to-date peer"),
                "Peers: \(status.peers.count)",
            ]
            let rows = status.peers.map { peer in
                [
                    "\(peer.site)", "cursor \(peer.cursor)",
                    "last contact \(timestamp(milliseconds: peer.lastContactMilliseconds))",
                    "acknowledged \(peer.acknowledged)",
                    "\(peer.pendingObjects) pending",
                ]
            }
            let table = TextTable(measuring: rows)
            lines += rows.map { table.line($0, indent: "  ") }
            lines.append(
                "Kept types: " + (status.keptTypes.isEmpty ? "none" : status.keptTypes.joined(separator: ", ")))
            lines.append("Kept fields:" + (status.keptFields.isEmpty ? " none" : ""))
            lines += status.keptFields.map { "  " + $0 }
            return lines.map { indent + $0 }
        }

        /// A date in UTC, to the millisecond: 2026-11-26T04:05:05.123Z.
        static func timestamp(_ date: Date) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: date)
        }

        static func timestamp(milliseconds: UInt64) -> String {
            timestamp(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        }
    }
}
