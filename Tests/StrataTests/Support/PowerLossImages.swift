import Foundation

/// What a power loss can leave of one file name, replayed from the events
/// a ``WriteRecorder`` recorded: for each point at which the power may be
/// cut (after each event), the states of the disk that POSIX allows.
///
/// - A write or a truncation is on the disk once a later `fsync` or
///   `fdatasync` of its file returned (or an `msync` of its range, for a
///   write), or when it returns, for a descriptor opened with `O_DSYNC`.
///   Until then it may be on the disk or not, in any order, and a write
///   may be torn at 512-byte sectors.
/// - A new name, a rename or an unlink is on the disk once a later `fsync`
///   of the folder returned. Until then the folder may hold any prefix of
///   those changes, in order, as journaling file systems keep them.
///
/// Each point gives one image with every pending change dropped, one with
/// every pending change kept, and, when the name's file has pending
/// changes, images that keep a seeded half of them, a seeded prefix, or a
/// seeded half of the sectors of each write.
struct PowerLossImages: Sequence {
    typealias Event = WriteRecorder.Event

    /// A file as it was before the first event: on the disk, whole.
    struct File {
        var inode: UInt64
        var bytes: [UInt8]

        /// The file at `path` as it is now.
        init(path: String) throws {
            var info = stat()
            guard stat(path, &info) == 0 else {
                throw WriteRecorder.RecordError(message: "\(path) cannot be read")
            }
            inode = UInt64(info.st_ino)
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        }
    }

    /// One state of the disk after a power cut.
    struct Image {
        /// How many events had returned when the power was cut.
        var cut: Int
        /// The marks among those events: what had returned.
        var marks: [Int]
        /// The file the name holds, and its bytes; nil when there is none.
        var inode: UInt64?
        var bytes: [UInt8]?
        /// Which of the pending changes the image keeps, for messages.
        var variant: String
    }

    let events: [Event]
    let name: String
    let base: [String: File]
    /// For each write and truncation, the index of the event after which it
    /// is on the disk, or nil when none before the end makes it so.
    private let durableAfter: [Int?]
    /// For each change to the folder, the index of the folder's next sync.
    private let folderDurableAfter: [Int?]

    init(events: [Event], name: String, base: [String: File]) {
        self.events = events
        self.name = name
        self.base = base
        var durable = [Int?](repeating: nil, count: events.count)
        var folder = [Int?](repeating: nil, count: events.count)
        for (index, event) in events.enumerated() {
            switch event {
            case .write(let inode, let offset, let bytes, let isDurable):
                durable[index] =
                    isDurable
                    ? index
                    : events.indices.dropFirst(index + 1).first { later in
                        switch events[later] {
                        case .sync(inode): true
                        case .rangeSync(inode, let start, let length):
                            start < offset + bytes.count && offset < start + length
                        default: false
                        }
                    }
            case .truncate(let inode, _):
                durable[index] = events.indices.dropFirst(index + 1).first { events[$0] == .sync(inode: inode) }
            case .create, .rename, .unlink:
                folder[index] = events.indices.dropFirst(index + 1).first { events[$0] == .folderSync }
            default:
                break
            }
        }
        durableAfter = durable
        folderDurableAfter = folder
    }

    func makeIterator() -> IndexingIterator<[Image]> {
        (0 ... events.count).flatMap(images(cutAt:)).makeIterator()
    }

    /// The images of a power cut after the first `cut` events.
    func images(cutAt cut: Int) -> [Image] {
        let marks = events[..<cut].compactMap { event -> Int? in
            if case .mark(let mark) = event { mark } else { nil }
        }
        let changes = events.indices.prefix(cut).filter(isFolderChange)
        let pendingFrom = changes.firstIndex { (folderDurableAfter[$0] ?? Int.max) >= cut } ?? changes.count
        var images: [Image] = []
        for kept in pendingFrom ... changes.count {
            let inode = self.inode(after: changes.prefix(kept))
            var variants: [(String, (Int, Int) -> Keep)] = [("nothing pending", { _, _ in .none })]
            let pending = inode.map { pendingChanges(of: $0, cut: cut) } ?? []
            if !pending.isEmpty {
                variants.append(("everything pending", { _, _ in .all }))
                for seed in 1 ... 3 {
                    var generator = SplitMix64(seed: UInt64(cut * 100 + seed))
                    let choices = pending.map { _ in Bool.random(using: &generator) }
                    variants.append(
                        ("a seeded half (seed \(seed))", { position, _ in choices[position] ? .all : .none }))
                }
                var generator = SplitMix64(seed: UInt64(cut * 100 + 50))
                let prefix = Int.random(in: 1 ... pending.count, using: &generator)
                variants.append(("the first \(prefix) pending", { position, _ in position < prefix ? .all : .none }))
                for seed in 1 ... 2 {
                    let sectorSeed = UInt64(cut * 100 + 60 + seed)
                    variants.append(
                        (
                            "a seeded half of each write's sectors (seed \(seed))",
                            { _, index in .sectors(sectorSeed &+ UInt64(index)) }
                        ))
                }
            }
            let names = kept == changes.count ? "" : ", \(changes.count - kept) of the folder's changes undone"
            for (label, keep) in variants {
                images.append(
                    Image(
                        cut: cut, marks: marks, inode: inode,
                        bytes: inode.map { contents(of: $0, cut: cut, pending: pending, keep: keep) },
                        variant: label + names))
            }
        }
        return images
    }

    private func isFolderChange(_ index: Int) -> Bool {
        switch events[index] {
        case .create, .rename, .unlink: true
        default: false
        }
    }

    /// The file the name holds once `changes` (indexes of folder changes)
    /// are applied to the names before the first event.
    private func inode(after changes: some Sequence<Int>) -> UInt64? {
        var names = base.mapValues(\.inode)
        for index in changes {
            switch events[index] {
            case .create(let inode, let name): names[name] = inode
            case .rename(let inode, let from, let to):
                if !from.isEmpty { names[from] = nil }
                if !to.isEmpty { names[to] = inode }
            case .unlink(let name): names[name] = nil
            default: break
            }
        }
        return names[name]
    }

    /// The writes and truncations of `inode` before `cut` that are not yet
    /// on the disk there.
    private func pendingChanges(of inode: UInt64, cut: Int) -> [Int] {
        events.indices.prefix(cut).filter { index in
            guard self.inode(of: events[index]) == inode else { return false }
            return (durableAfter[index] ?? Int.max) >= cut
        }
    }

    private func inode(of event: Event) -> UInt64? {
        switch event {
        case .write(let inode, _, _, _), .truncate(let inode, _): inode
        default: nil
        }
    }

    enum Keep {
        case none, all
        /// Each 512-byte sector of the write, kept or not as the seeded
        /// generator draws.
        case sectors(UInt64)
    }

    /// The bytes of `inode` at the cut: its bytes before the first event,
    /// or none for a file created since, then every change on the disk,
    /// and of the pending ones what `keep` (given the position among
    /// `pending` and the event's index) says.
    private func contents(of inode: UInt64, cut: Int, pending: [Int], keep: (Int, Int) -> Keep) -> [UInt8] {
        // A file created since starts empty, even under a reused inode number.
        let created = events.indices.prefix(cut).last { index in
            if case .create(inode, _) = events[index] { true } else { false }
        }
        var bytes = created == nil ? base.values.first { $0.inode == inode }?.bytes ?? [] : []
        let start = created.map { $0 + 1 } ?? 0
        for index in events.indices[start ..< cut] where self.inode(of: events[index]) == inode {
            let choice: Keep = pending.firstIndex(of: index).map { keep($0, index) } ?? .all
            switch (events[index], choice) {
            case (_, .none):
                continue
            case (.write(_, let offset, let written, _), .all):
                Self.write(written, at: offset, into: &bytes)
            case (.write(_, let offset, let written, _), .sectors(let seed)):
                var generator = SplitMix64(seed: seed)
                var start = offset
                while start < offset + written.count {
                    let end = Swift.min(offset + written.count, (start / 512 + 1) * 512)
                    if Bool.random(using: &generator) {
                        Self.write(written[(start - offset) ..< (end - offset)], at: start, into: &bytes)
                    }
                    start = end
                }
            case (.truncate(_, let length), _):
                if length < bytes.count {
                    bytes.removeLast(bytes.count - length)
                } else {
                    bytes += [UInt8](repeating: 0, count: length - bytes.count)
                }
            default:
                break
            }
        }
        return bytes
    }

    private static func write(_ written: some Collection<UInt8>, at offset: Int, into bytes: inout [UInt8]) {
        if bytes.count < offset + written.count {
            bytes += [UInt8](repeating: 0, count: offset + written.count - bytes.count)
        }
        bytes.replaceSubrange(offset ..< offset + written.count, with: written)
    }
}
