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

        /// Whether the node holds entries rather than children; a node
        /// never changes kind. Stored, so that asking needs no exclusive
        /// access to `children`.
        let isLeaf: Bool

        /// Creates a leaf.
        init(keys: [Key], values: [Value]) {
            self.isLeaf = true
            self.keys = keys
            self.values = values
            self.children = []
            self.childCounts = []
            self.count = keys.count
        }

        /// Creates a branch.
        init(keys: [Key], children: [Node], childCounts: [Int]) {
            self.isLeaf = false
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
            isLeaf = node.isLeaf
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
        /// neighbour: merges the two when they fit in one node with room to
        /// spare, and otherwise shares their contents evenly.
        ///
        /// Two nodes that exactly fill one are shared (half each), not
        /// merged: a full node splits at the next insertion, so a value that
        /// leaves and re-enters one place on every commit (a value sorted by
        /// a changing property) would otherwise merge and split two nodes
        /// each time.
        private func rebalance(childAt index: Int) {
            // A branch holds at least two children, so a neighbour exists.
            let leftIndex = index > 0 ? index - 1 : index
            let rightIndex = leftIndex + 1
            makeChildUnique(at: leftIndex)
            let left = children[leftIndex]
            let fits =
                left.isLeaf
                ? left.keys.count + children[rightIndex].keys.count < Self.leafCapacity
                : left.children.count + children[rightIndex].children.count < Self.branchCapacity
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

// A node changes only while nothing else refers to it, so a node that two
// threads can both reach is never written.
extension RankedTree.Node: @unchecked Sendable where Key: Sendable, Value: Sendable {}
