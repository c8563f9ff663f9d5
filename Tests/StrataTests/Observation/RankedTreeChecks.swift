import Testing

@testable import Strata

// What RankedTreeTests checks a tree against: a sorted array model, the
// tree's shape rules, and random operations on both.

/// Runs `steps` random insertions, replacements and removals on `tree` and
/// `model`, comparing the answers of each step and everything every few steps.
/// The size grows and shrinks in phases, so leaves and branches both split and
/// merge.
func runRandomOperations<Key: Comparable, Value: Equatable>(
    on tree: inout RankedTree<Key, Value>,
    model: inout SortedModel<Key, Value>,
    steps: Int,
    random: inout SplitMix64,
    randomKey: (inout SplitMix64) -> Key,
    randomValue: (inout SplitMix64) -> Value,
    absentAfter: (Key) -> Key,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var failures: [String] = []
    for step in 0 ..< steps {
        let growing = (step / 1_500) % 2 == 0
        let insertChance = growing ? 7 : 2
        if random.below(10) < insertChance {
            let key = randomKey(&random)
            let value = randomValue(&random)
            let result = tree.insert(value, forKey: key)
            let expected = model.insert(value, forKey: key)
            if result != expected {
                failures.append("step \(step): insert gave \(result), expected \(expected)")
            }
            if tree.value(forKey: key) != value || tree.rank(of: key) != (expected.position, true) {
                failures.append("step \(step): the inserted key reads back wrong")
            }
        } else {
            let key =
                !model.keys.isEmpty && random.below(2) == 0
                ? model.keys[random.below(model.keys.count)] : randomKey(&random)
            let result = tree.remove(forKey: key)
            let expected = model.remove(forKey: key)
            if result?.position != expected?.position || result?.value != expected?.value {
                failures.append(
                    "step \(step): remove gave \(String(describing: result)), expected \(String(describing: expected))")
            }
            if tree.value(forKey: key) != nil || tree.rank(of: key) != (model.lowerBound(of: key), false) {
                failures.append("step \(step): the removed key reads back wrong")
            }
        }
        if tree.count != model.keys.count {
            failures.append("step \(step): count \(tree.count), expected \(model.keys.count)")
        }
        if !model.keys.isEmpty {
            let position = random.below(model.keys.count)
            let entry = tree[position]
            if entry.key != model.keys[position] || entry.value != model.values[position] {
                failures.append("step \(step): entry at \(position) is wrong")
            }
        }
        if failures.count > 5 {
            break
        }
        if step % 250 == 0 {
            expectMatches(tree, model, absentAfter: absentAfter, sourceLocation: sourceLocation)
        }
    }
    #expect(failures.isEmpty, "\(failures)", sourceLocation: sourceLocation)
    expectMatches(tree, model, absentAfter: absentAfter, sourceLocation: sourceLocation)
}

/// Compares every answer of `tree` with `model`, and checks the tree's shape:
/// every leaf at one depth, every node but the root at least half full,
/// counts and separators that agree with the nodes below them.
///
/// `absentAfter` gives, for a key, a key that is greater and less than the
/// next key that can be present, so that absent keys can be probed.
func expectMatches<Key: Comparable, Value: Equatable>(
    _ tree: RankedTree<Key, Value>,
    _ model: SortedModel<Key, Value>,
    absentAfter: (Key) -> Key,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(tree.count == model.keys.count, sourceLocation: sourceLocation)
    #expect(tree.isEmpty == model.keys.isEmpty, sourceLocation: sourceLocation)
    #expect(tree.underestimatedCount == model.keys.count, sourceLocation: sourceLocation)
    let entries = Array(tree)
    #expect(entries.map(\.key) == model.keys, sourceLocation: sourceLocation)
    #expect(entries.map(\.value) == model.values, sourceLocation: sourceLocation)

    var failures: [String] = []
    let strideLength = max(1, model.keys.count / 3_000)
    for position in stride(from: 0, to: model.keys.count, by: strideLength) {
        let key = model.keys[position]
        let entry = tree[position]
        if entry.key != key || entry.value != model.values[position] {
            failures.append("entry at \(position)")
        }
        if tree.rank(of: key) != (position, true) {
            failures.append("rank of the key at \(position)")
        }
        if tree.value(forKey: key) != model.values[position] {
            failures.append("value of the key at \(position)")
        }
        let absent = absentAfter(key)
        if tree.rank(of: absent) != (position + 1, false) || tree.value(forKey: absent) != nil {
            failures.append("absent key after \(position)")
        }
        if failures.count > 5 {
            break
        }
    }
    #expect(failures.isEmpty, "\(failures)", sourceLocation: sourceLocation)
    let problems = shapeProblems(of: tree)
    #expect(problems.isEmpty, "\(problems.prefix(5))", sourceLocation: sourceLocation)
}

/// What is wrong with the nodes of `tree`, if anything.
func shapeProblems<Key: Comparable, Value>(of tree: RankedTree<Key, Value>) -> [String] {
    typealias Node = RankedTree<Key, Value>.Node
    guard let root = tree.root else { return [] }
    var problems: [String] = []
    var leafDepths = Set<Int>()

    func isAscending(_ keys: [Key]) -> Bool {
        zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }
    }
    func isWithin(_ keys: [Key], lower: Key?, upper: Key?) -> Bool {
        keys.allSatisfy { key in (lower.map { $0 <= key } ?? true) && (upper.map { key < $0 } ?? true) }
    }
    // Returns the number of entries found below `node`.
    func visit(_ node: Node, depth: Int, isRoot: Bool, lower: Key?, upper: Key?) -> Int {
        if node.isLeaf {
            leafDepths.insert(depth)
            let minimum = isRoot ? 1 : Node.leafCapacity / 2
            if node.keys.count < minimum || node.keys.count > Node.leafCapacity {
                problems.append("leaf of \(node.keys.count) entries at depth \(depth)")
            }
            if node.values.count != node.keys.count || !node.childCounts.isEmpty || node.count != node.keys.count {
                problems.append("leaf with inconsistent arrays at depth \(depth)")
            }
            if !isAscending(node.keys) || !isWithin(node.keys, lower: lower, upper: upper) {
                problems.append("leaf keys out of order at depth \(depth)")
            }
            return node.keys.count
        }
        let minimum = isRoot ? 2 : Node.branchCapacity / 2
        if node.children.count < minimum || node.children.count > Node.branchCapacity {
            problems.append("branch of \(node.children.count) children at depth \(depth)")
        }
        if node.keys.count != node.children.count - 1 || node.childCounts.count != node.children.count
            || !node.values.isEmpty
        {
            problems.append("branch with inconsistent arrays at depth \(depth)")
            return node.count
        }
        if !isAscending(node.keys) || !isWithin(node.keys, lower: lower, upper: upper) {
            problems.append("separators out of order at depth \(depth)")
        }
        var total = 0
        for (index, child) in node.children.enumerated() {
            let below = visit(
                child,
                depth: depth + 1,
                isRoot: false,
                lower: index == 0 ? lower : node.keys[index - 1],
                upper: index == node.keys.count ? upper : node.keys[index]
            )
            if below != node.childCounts[index] || below != child.count {
                problems.append("child count \(node.childCounts[index]) for \(below) entries at depth \(depth)")
            }
            total += below
        }
        if total != node.count {
            problems.append("branch count \(node.count) for \(total) entries at depth \(depth)")
        }
        return total
    }

    let total = visit(root, depth: 0, isRoot: true, lower: nil, upper: nil)
    if total != tree.count {
        problems.append("tree count \(tree.count) for \(total) entries")
    }
    if leafDepths.count != 1 {
        problems.append("leaves at depths \(leafDepths.sorted())")
    }
    return problems
}

/// The obvious sorted map: two parallel arrays and a linear search (not
/// the binary search the tree's nodes use, so that the oracle does not
/// share the code it checks).
struct SortedModel<Key: Comparable, Value> {
    var keys: [Key] = []
    var values: [Value] = []

    func lowerBound(of key: Key) -> Int {
        keys.firstIndex { !($0 < key) } ?? keys.count
    }

    @discardableResult
    mutating func insert(_ value: Value, forKey key: Key) -> (position: Int, replaced: Bool) {
        let index = lowerBound(of: key)
        if index < keys.count && keys[index] == key {
            values[index] = value
            return (index, true)
        }
        keys.insert(key, at: index)
        values.insert(value, at: index)
        return (index, false)
    }

    @discardableResult
    mutating func remove(forKey key: Key) -> (position: Int, value: Value)? {
        let index = lowerBound(of: key)
        guard index < keys.count && keys[index] == key else { return nil }
        keys.remove(at: index)
        return (index, values.remove(at: index))
    }
}

/// A key like an index entry's: bytes, then a number to break ties.
struct NameKey: Comparable, Hashable {
    var bytes: [UInt8]
    var number: Int

    static func < (lhs: NameKey, rhs: NameKey) -> Bool {
        if lhs.bytes != rhs.bytes {
            return lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
        }
        return lhs.number < rhs.number
    }

    /// A key of up to three bytes from a small alphabet and an even number,
    /// so that many keys share their bytes and odd numbers are never present.
    static func random(using random: inout SplitMix64) -> NameKey {
        let length = random.below(4)
        let bytes = (0 ..< length).map { _ in UInt8(97 + random.below(4)) }
        return NameKey(bytes: bytes, number: 2 * random.below(60))
    }
}

extension SplitMix64 {
    /// A number in `0..<bound`.
    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }
}
