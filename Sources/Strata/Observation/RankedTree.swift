/// A sorted map from keys to values, persistent, that also answers questions
/// about positions.
///
/// A copy shares every node with the original, and a change copies only the
/// nodes on one root-to-leaf path, O(log n) of them. A node that no other tree
/// (or iterator) refers to is changed in place instead, so a tree that is never
/// copied pays for no copies; a copy never observes a change made to another.
/// Every node knows how many entries it holds, so the position of a key and
/// the entry at a position are O(log n) as well.
///
/// It is a B+tree. Leaves hold up to ``Node/leafCapacity`` entries in key
/// order; branches hold up to ``Node/branchCapacity`` children, the number of
/// entries below each child, and the keys that separate the children. Every
/// node but the root is at least half full, so the depth stays O(log n).
struct RankedTree<Key: Comparable, Value> {
    /// The top node, or nil when the tree is empty.
    private(set) var root: Node?

    /// Creates an empty tree. O(1).
    init() {
        root = nil
    }

    /// Creates a tree holding `entries`, which must be in strictly ascending
    /// key order. O(n).
    ///
    /// Leaves are filled to capacity (the last two share what is left), so the
    /// tree is as shallow and as small as it can be.
    init<S: Sequence>(sorted entries: S) where S.Element == (key: Key, value: Value) {
        let capacity = Node.leafCapacity
        var leaves: [Node] = []
        var keys: [Key] = []
        var values: [Value] = []
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
        for (key, value) in entries {
            if let previous = keys.last ?? leaves.last?.keys.last {
                precondition(previous < key, "RankedTree(sorted:) needs keys in strictly ascending order.")
            }
            if keys.count == capacity {
                leaves.append(Node(keys: keys, values: values))
                keys = []
                values = []
                keys.reserveCapacity(capacity)
                values.reserveCapacity(capacity)
            }
            keys.append(key)
            values.append(value)
        }
        guard !keys.isEmpty else {
            root = nil
            return
        }
        if keys.count < capacity / 2, let full = leaves.popLast() {
            // A short last leaf shares the entries of the full one before it,
            // so that both are at least half full.
            let allKeys = full.keys + keys
            let allValues = full.values + values
            let half = allKeys.count / 2
            leaves.append(Node(keys: Array(allKeys[..<half]), values: Array(allValues[..<half])))
            keys = Array(allKeys[half...])
            values = Array(allValues[half...])
        }
        leaves.append(Node(keys: keys, values: values))

        var level = leaves
        var firstKeys = leaves.map { $0.keys[0] }
        while level.count > 1 {
            let groups = (level.count + Node.branchCapacity - 1) / Node.branchCapacity
            var parents: [Node] = []
            var parentFirstKeys: [Key] = []
            parents.reserveCapacity(groups)
            parentFirstKeys.reserveCapacity(groups)
            for group in 0 ..< groups {
                // Even groups: with two or more, each gets at least half of
                // the capacity.
                let start = level.count * group / groups
                let end = level.count * (group + 1) / groups
                let children = Array(level[start ..< end])
                parents.append(
                    Node(
                        keys: Array(firstKeys[(start + 1) ..< end]),
                        children: children,
                        childCounts: children.map(\.count)
                    )
                )
                parentFirstKeys.append(firstKeys[start])
            }
            level = parents
            firstKeys = parentFirstKeys
        }
        root = level[0]
    }

    /// The number of entries. O(1).
    var count: Int {
        root?.count ?? 0
    }

    /// Whether the tree holds no entries. O(1).
    var isEmpty: Bool {
        root == nil
    }

    /// The entry at `position`, counting from 0 in key order. O(log n).
    ///
    /// - Precondition: `position` is in `0..<count`.
    subscript(position: Int) -> (key: Key, value: Value) {
        precondition(position >= 0 && position < count, "Position \(position) is outside 0..<\(count).")
        var node = root!
        var offset = position
        while !node.isLeaf {
            var index = 0
            while offset >= node.childCounts[index] {
                offset -= node.childCounts[index]
                index += 1
            }
            node = node.children[index]
        }
        return (node.keys[offset], node.values[offset])
    }

    /// The number of keys smaller than `key`, and whether `key` is present;
    /// when it is, the number is its position. O(log n).
    func rank(of key: Key) -> (position: Int, found: Bool) {
        guard var node = root else { return (0, false) }
        var position = 0
        while !node.isLeaf {
            let index = node.childIndex(for: key)
            for sibling in 0 ..< index {
                position += node.childCounts[sibling]
            }
            node = node.children[index]
        }
        let index = node.lowerBound(of: key)
        return (position + index, index < node.keys.count && node.keys[index] == key)
    }

    /// The value stored for `key`, or nil when the key is absent. O(log n).
    func value(forKey key: Key) -> Value? {
        guard var node = root else { return nil }
        while !node.isLeaf {
            node = node.children[node.childIndex(for: key)]
        }
        let index = node.lowerBound(of: key)
        return index < node.keys.count && node.keys[index] == key ? node.values[index] : nil
    }

    /// Stores `value` for `key`, replacing the value of an equal key that is
    /// already present (the stored key stays). O(log n).
    ///
    /// - Returns: The entry's position after the change, and whether it
    ///   replaced a value.
    @discardableResult
    mutating func insert(_ value: Value, forKey key: Key) -> (position: Int, replaced: Bool) {
        guard root != nil else {
            root = Node(keys: [key], values: [value])
            return (0, false)
        }
        if !isKnownUniquelyReferenced(&root) {
            root = root!.copy()
        }
        let result = root!.insert(value, forKey: key)
        if let (separator, right) = result.split {
            let left = root!
            root = Node(keys: [separator], children: [left, right], childCounts: [left.count, right.count])
        }
        return (result.position, result.replaced)
    }

    /// Removes `key` and its value. O(log n).
    ///
    /// - Returns: The position the entry had and its value, or nil when the
    ///   key is absent (the tree is then unchanged).
    @discardableResult
    mutating func remove(forKey key: Key) -> (position: Int, value: Value)? {
        guard root != nil else { return nil }
        if !isKnownUniquelyReferenced(&root) {
            root = root!.copy()
        }
        guard let removed = root!.remove(forKey: key) else { return nil }
        if root!.count == 0 {
            root = nil
        } else if !root!.isLeaf && root!.children.count == 1 {
            root = root!.children[0]
        }
        return removed
    }
}

extension RankedTree: Sequence {
    /// An iterator over a tree's entries in key order, O(n) for all of them.
    ///
    /// It keeps the path from the root to the current leaf, so each step moves
    /// to the next entry or the next leaf without starting again from the
    /// root. It holds what it reads (nodes, or a leaf's arrays), so later
    /// changes to the tree copy those and the iterator goes on seeing the
    /// entries it started with.
    struct Iterator: IteratorProtocol {
        /// The branches above the current leaf, each with the index of the
        /// child being visited.
        private var path: [(node: Node, index: Int)] = []
        /// The current leaf's keys and values, held directly so that a step
        /// within a leaf reads no node.
        private var keys: [Key] = []
        private var values: [Value] = []
        private var index = 0

        fileprivate init(root: Node?) {
            if let root {
                descend(from: root)
            }
        }

        private mutating func descend(from top: Node) {
            var node = top
            while !node.isLeaf {
                path.append((node, 0))
                node = node.children[0]
            }
            keys = node.keys
            values = node.values
            index = 0
        }

        /// The next entry in key order, or nil after the last. O(1) amortized.
        mutating func next() -> (key: Key, value: Value)? {
            if index == keys.count {
                // Leaves are never empty, so the next leaf has an entry.
                var descended = false
                while let (node, childIndex) = path.popLast() {
                    if childIndex + 1 < node.children.count {
                        path.append((node, childIndex + 1))
                        descend(from: node.children[childIndex + 1])
                        descended = true
                        break
                    }
                }
                guard descended else { return nil }
            }
            defer { index += 1 }
            return (keys[index], values[index])
        }
    }

    /// An iterator over the entries in key order.
    func makeIterator() -> Iterator {
        Iterator(root: root)
    }

    /// The number of entries. O(1).
    var underestimatedCount: Int { count }
}

extension RankedTree: Sendable where Key: Sendable, Value: Sendable {}
