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

extension RankedTree {
    /// One node of a ``RankedTree``: a leaf of entries, or a branch of nodes.
    ///
    /// A node may change only while a single parent (or tree) refers to it,
    /// which `isKnownUniquelyReferenced` tells; a shared node is frozen, and a
    /// change copies it first.
    final class Node {
        /// The most entries a leaf holds; a leaf other than the root holds at
        /// least half as many.
        static var leafCapacity: Int { 64 }

        /// The most children a branch holds; a branch other than the root
        /// holds at least half as many, and a branch root at least two.
        static var branchCapacity: Int { 32 }

        /// A leaf's keys, ascending. A branch's separators, one fewer than its
        /// children: `keys[i]` is greater than every key below `children[i]`
        /// and at most every key below `children[i + 1]`.
        fileprivate(set) var keys: [Key]

        /// A leaf's values, one for each key; empty in a branch.
        fileprivate(set) var values: [Value]

        /// A branch's children; empty in a leaf.
        fileprivate(set) var children: [Node]

        /// The number of entries below each child; empty in a leaf.
        fileprivate(set) var childCounts: [Int]

        /// The number of entries in this node and below it.
        fileprivate(set) var count: Int

        /// Whether the node holds entries rather than children.
        var isLeaf: Bool { children.isEmpty }

        /// Creates a leaf.
        init(keys: [Key], values: [Value]) {
            self.keys = keys
            self.values = values
            self.children = []
            self.childCounts = []
            self.count = keys.count
        }

        /// Creates a branch.
        init(keys: [Key], children: [Node], childCounts: [Int]) {
            self.keys = keys
            self.values = []
            self.children = children
            self.childCounts = childCounts
            var count = 0
            for childCount in childCounts {
                count += childCount
            }
            self.count = count
        }

        private init(copying node: Node) {
            keys = node.keys
            values = node.values
            children = node.children
            childCounts = node.childCounts
            count = node.count
        }

        /// A node with the same contents, free to change. O(capacity): the
        /// arrays are shared until one of them changes.
        func copy() -> Node {
            Node(copying: self)
        }

        /// The index of the first key not less than `key`, or `keys.count`.
        func lowerBound(of key: Key) -> Int {
            var low = 0
            var high = keys.count
            while low < high {
                let middle = (low + high) / 2
                if keys[middle] < key {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            return low
        }

        /// In a branch, the index of the child whose range holds `key`: the
        /// number of separators not greater than `key`.
        func childIndex(for key: Key) -> Int {
            var low = 0
            var high = keys.count
            while low < high {
                let middle = (low + high) / 2
                if key < keys[middle] {
                    high = middle
                } else {
                    low = middle + 1
                }
            }
            return low
        }

        /// Inserts or replaces in this unshared node and below it, splitting
        /// this node when it overflows.
        ///
        /// - Returns: The entry's position within this node, whether it
        ///   replaced one, and the right half that the caller must place after
        ///   this node when it split, with the key that separates the halves.
        func insert(
            _ value: Value,
            forKey key: Key
        ) -> (position: Int, replaced: Bool, split: (separator: Key, right: Node)?) {
            if isLeaf {
                let index = lowerBound(of: key)
                if index < keys.count && keys[index] == key {
                    values[index] = value
                    return (index, true, nil)
                }
                keys.insert(key, at: index)
                values.insert(value, at: index)
                count += 1
                return (index, false, keys.count > Self.leafCapacity ? split() : nil)
            }
            let index = childIndex(for: key)
            makeChildUnique(at: index)
            let result = children[index].insert(value, forKey: key)
            var position = result.position
            for sibling in 0 ..< index {
                position += childCounts[sibling]
            }
            if !result.replaced {
                count += 1
                childCounts[index] += 1
            }
            guard let (separator, right) = result.split else {
                return (position, result.replaced, nil)
            }
            keys.insert(separator, at: index)
            children.insert(right, at: index + 1)
            childCounts[index] -= right.count
            childCounts.insert(right.count, at: index + 1)
            return (position, result.replaced, children.count > Self.branchCapacity ? split() : nil)
        }

        /// Removes `key` from this unshared node and below it, leaving it to
        /// the caller to rebalance this node if it becomes underfull.
        ///
        /// - Returns: The entry's position within this node and its value, or
        ///   nil when the key is absent.
        func remove(forKey key: Key) -> (position: Int, value: Value)? {
            if isLeaf {
                let index = lowerBound(of: key)
                guard index < keys.count && keys[index] == key else { return nil }
                keys.remove(at: index)
                count -= 1
                return (index, values.remove(at: index))
            }
            let index = childIndex(for: key)
            makeChildUnique(at: index)
            guard let removed = children[index].remove(forKey: key) else { return nil }
            var position = removed.position
            for sibling in 0 ..< index {
                position += childCounts[sibling]
            }
            count -= 1
            childCounts[index] -= 1
            if children[index].isUnderfull {
                rebalance(childAt: index)
            }
            return (position, removed.value)
        }

        /// Whether the node, if it is not the root, holds too few entries or
        /// children.
        private var isUnderfull: Bool {
            isLeaf ? keys.count < Self.leafCapacity / 2 : children.count < Self.branchCapacity / 2
        }

        /// Replaces the child at `index` by a copy unless this node is the
        /// only one that refers to it.
        private func makeChildUnique(at index: Int) {
            if !isKnownUniquelyReferenced(&children[index]) {
                children[index] = children[index].copy()
            }
        }

        /// Moves the upper half of this overflowing node into a new node.
        ///
        /// - Returns: The new node and the key that separates it from this one.
        private func split() -> (separator: Key, right: Node) {
            if isLeaf {
                let half = keys.count / 2
                let right = Node(keys: Array(keys[half...]), values: Array(values[half...]))
                keys.removeSubrange(half...)
                values.removeSubrange(half...)
                count = keys.count
                return (right.keys[0], right)
            }
            let half = children.count / 2
            let separator = keys[half - 1]
            let right = Node(
                keys: Array(keys[half...]),
                children: Array(children[half...]),
                childCounts: Array(childCounts[half...])
            )
            keys.removeSubrange((half - 1)...)
            children.removeSubrange(half...)
            childCounts.removeSubrange(half...)
            count -= right.count
            return (separator, right)
        }

        /// Mends the underfull child at `index` (already unshared) with a
        /// neighbour: merges the two when they fit in one node, and otherwise
        /// shares their contents evenly.
        private func rebalance(childAt index: Int) {
            // A branch holds at least two children, so a neighbour exists.
            let leftIndex = index > 0 ? index - 1 : index
            let rightIndex = leftIndex + 1
            makeChildUnique(at: leftIndex)
            let left = children[leftIndex]
            let fits =
                left.isLeaf
                ? left.keys.count + children[rightIndex].keys.count <= Self.leafCapacity
                : left.children.count + children[rightIndex].children.count <= Self.branchCapacity
            if fits {
                left.absorb(children[rightIndex], separator: left.isLeaf ? nil : keys[leftIndex])
                keys.remove(at: leftIndex)
                children.remove(at: rightIndex)
                childCounts.remove(at: rightIndex)
                childCounts[leftIndex] = left.count
                return
            }
            makeChildUnique(at: rightIndex)
            let right = children[rightIndex]
            keys[leftIndex] = left.shareEvenly(with: right, separator: keys[leftIndex])
            childCounts[leftIndex] = left.count
            childCounts[rightIndex] = right.count
        }

        /// Appends the contents of `right`, the next node on the same level,
        /// to this unshared node. `separator` is the parent's key between the
        /// two, needed when they are branches.
        private func absorb(_ right: Node, separator: Key?) {
            if let separator {
                keys.append(separator)
                children += right.children
                childCounts += right.childCounts
            } else {
                values += right.values
            }
            keys += right.keys
            count += right.count
        }

        /// Moves entries or children between this unshared node and `right`,
        /// the next unshared node on the same level, so that each holds half.
        ///
        /// - Returns: The new key that separates the two in the parent.
        private func shareEvenly(with right: Node, separator: Key) -> Key {
            if isLeaf {
                let target = (keys.count + right.keys.count) / 2
                if keys.count < target {
                    let moved = target - keys.count
                    keys += right.keys[..<moved]
                    values += right.values[..<moved]
                    right.keys.removeFirst(moved)
                    right.values.removeFirst(moved)
                } else {
                    let kept = target
                    right.keys.insert(contentsOf: keys[kept...], at: 0)
                    right.values.insert(contentsOf: values[kept...], at: 0)
                    keys.removeSubrange(kept...)
                    values.removeSubrange(kept...)
                }
                count = keys.count
                right.count = right.keys.count
                return right.keys[0]
            }
            let target = (children.count + right.children.count) / 2
            let newSeparator: Key
            var movedCount = 0
            if children.count < target {
                let moved = target - children.count
                keys.append(separator)
                keys += right.keys[..<(moved - 1)]
                newSeparator = right.keys[moved - 1]
                right.keys.removeFirst(moved)
                children += right.children[..<moved]
                right.children.removeFirst(moved)
                for childCount in right.childCounts[..<moved] {
                    movedCount += childCount
                }
                childCounts += right.childCounts[..<moved]
                right.childCounts.removeFirst(moved)
                count += movedCount
                right.count -= movedCount
            } else {
                let kept = target
                right.keys.insert(separator, at: 0)
                right.keys.insert(contentsOf: keys[kept...], at: 0)
                newSeparator = keys[kept - 1]
                keys.removeSubrange((kept - 1)...)
                right.children.insert(contentsOf: children[kept...], at: 0)
                children.removeSubrange(kept...)
                for childCount in childCounts[kept...] {
                    movedCount += childCount
                }
                right.childCounts.insert(contentsOf: childCounts[kept...], at: 0)
                childCounts.removeSubrange(kept...)
                count -= movedCount
                right.count += movedCount
            }
            return newSeparator
        }
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

// A node changes only while nothing else refers to it, so a node that two
// threads can both reach is never written.
extension RankedTree.Node: @unchecked Sendable where Key: Sendable, Value: Sendable {}
