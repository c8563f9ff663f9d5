import Testing

@testable import Strata

/// A tree that loses and regains an entry in one place on every change
/// (a value sorted by a property that each commit changes) settles: its
/// nodes stop splitting and merging.
@Suite struct RankedTreeChurnTests {
    typealias Node = RankedTree<Int, Int>.Node

    /// A node, held without keeping it alive: a held node would be shared,
    /// and every change would copy it.
    final class Held {
        weak var node: Node?
        init(_ node: Node) { self.node = node }
    }

    static func nodes(_ tree: RankedTree<Int, Int>) -> [Node] {
        var found: [Node] = []
        var stack = tree.root.map { [$0] } ?? []
        while let node = stack.popLast() {
            found.append(node)
            stack += node.children
        }
        return found
    }

    @Test func aValueMovingToTheFrontOnEveryChangeStopsSplittingAndMerging() {
        // Full leaves, as an observation's first results are built.
        let size = 10_000
        var tree = RankedTree(sorted: (0 ..< size).map { (key: $0, value: $0) })
        // The value starts in the middle, then moves to the front again and
        // again, with a smaller sort key each time.
        var current = size / 2
        var front = -1
        func move() {
            tree.remove(forKey: current)
            tree.insert(front, forKey: front)
            current = front
            front -= 1
        }
        for _ in 0 ..< 3 { move() }
        let settled = Self.nodes(tree).map(Held.init)
        for _ in 0 ..< 100 { move() }
        #expect(settled.allSatisfy { $0.node != nil }, "a node was merged away")
        let now = Set(Self.nodes(tree).map(ObjectIdentifier.init))
        let kept = Set(settled.compactMap { $0.node.map(ObjectIdentifier.init) })
        #expect(now.subtracting(kept).isEmpty, "\(now.subtracting(kept).count) nodes are new")
        #expect(tree.count == size)
        #expect(tree.map(\.key) == [current] + Array(0 ..< size).filter { $0 != size / 2 })
    }
}
