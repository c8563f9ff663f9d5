import Testing

@testable import Strata

@Suite struct RankedTreeTests {
    @Test(arguments: [1, 2, 3] as [UInt64])
    func randomOperationsMatchASortedArray(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var tree = RankedTree<Int, Int>()
        var model = SortedModel<Int, Int>()
        runRandomOperations(
            on: &tree,
            model: &model,
            steps: 12_000,
            random: &random,
            randomKey: { 2 * $0.below(6_000) },
            randomValue: { $0.below(1_000_000) },
            absentAfter: { $0 + 1 }
        )
    }

    @Test func randomOperationsWithStructKeysMatchASortedArray() {
        var random = SplitMix64(seed: 42)
        var tree = RankedTree<NameKey, String>()
        var model = SortedModel<NameKey, String>()
        runRandomOperations(
            on: &tree,
            model: &model,
            steps: 6_000,
            random: &random,
            randomKey: { NameKey.random(using: &$0) },
            randomValue: { String($0.below(1_000_000)) },
            absentAfter: { NameKey(bytes: $0.bytes, number: $0.number + 1) }
        )
    }

    @Test func emptyTreeAnswersEveryQuestion() {
        var tree = RankedTree<Int, Int>()
        #expect(tree.isEmpty)
        #expect(tree.count == 0)
        #expect(tree.rank(of: 7) == (0, false))
        #expect(tree.value(forKey: 7) == nil)
        #expect(tree.remove(forKey: 7) == nil)
        #expect(Array(tree).isEmpty)
        #expect(tree.root == nil)
    }

    @Test(arguments: [0, 1, 2, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128, 129, 2_047, 2_048, 2_049, 10_000, 70_000])
    func buildingFromSortedEntriesMatchesTheInput(size: Int) {
        let entries = (0 ..< size).map { (key: 2 * $0, value: $0 * 7) }
        let tree = RankedTree(sorted: entries)
        let model = SortedModel(keys: entries.map(\.key), values: entries.map(\.value))
        expectMatches(tree, model, absentAfter: { $0 + 1 })
        #expect(tree.rank(of: -1) == (0, false))
    }

    @Test func buildingFromSortedStructKeysMatchesTheInput() {
        var random = SplitMix64(seed: 9)
        var keys = Set<NameKey>()
        while keys.count < 3_000 {
            keys.insert(NameKey.random(using: &random))
        }
        let sortedKeys = keys.sorted()
        let entries = sortedKeys.map { (key: $0, value: "\($0.number)") }
        let tree = RankedTree(sorted: entries)
        let model = SortedModel(keys: sortedKeys, values: entries.map(\.value))
        expectMatches(tree, model, absentAfter: { NameKey(bytes: $0.bytes, number: $0.number + 1) })
    }

    @Test func aTreeBuiltFromSortedEntriesTakesChanges() {
        var random = SplitMix64(seed: 5)
        let entries = (0 ..< 10_000).map { (key: 2 * $0, value: $0) }
        var tree = RankedTree(sorted: entries)
        var model = SortedModel(keys: entries.map(\.key), values: entries.map(\.value))
        runRandomOperations(
            on: &tree,
            model: &model,
            steps: 4_000,
            random: &random,
            randomKey: { 2 * $0.below(12_000) },
            randomValue: { $0.below(1_000) },
            absentAfter: { $0 + 1 }
        )
    }

    @Test func removingEverythingLeavesAnEmptyTreeThatGrowsAgain() {
        var random = SplitMix64(seed: 11)
        var keys = Array(0 ..< 5_000).map { 2 * $0 }
        keys.shuffle(using: &random)
        var tree = RankedTree<Int, Int>()
        var model = SortedModel<Int, Int>()
        for key in keys {
            tree.insert(key, forKey: key)
            model.insert(key, forKey: key)
        }
        expectMatches(tree, model, absentAfter: { $0 + 1 })

        keys.shuffle(using: &random)
        for (step, key) in keys.enumerated() {
            let removed = tree.remove(forKey: key)
            let expected = model.remove(forKey: key)
            #expect(removed?.position == expected?.position && removed?.value == expected?.value)
            if step % 250 == 0 {
                expectMatches(tree, model, absentAfter: { $0 + 1 })
            }
        }
        #expect(tree.isEmpty)
        #expect(tree.count == 0)
        #expect(tree.root == nil)
        #expect(tree.remove(forKey: keys[0]) == nil)

        for key in keys.sorted().reversed() {
            #expect(tree.insert(-key, forKey: key) == (0, false))
            model.insert(-key, forKey: key)
        }
        expectMatches(tree, model, absentAfter: { $0 + 1 })
    }

    @Test func ascendingAndDescendingRemovalsKeepTheTreeBalanced() {
        let entries = (0 ..< 5_000).map { (key: $0 * 2, value: $0) }
        for ascending in [true, false] {
            var tree = RankedTree(sorted: entries)
            var model = SortedModel(keys: entries.map(\.key), values: entries.map(\.value))
            let order = ascending ? entries.map(\.key) : Array(entries.map(\.key).reversed())
            for (step, key) in order.enumerated() {
                let removed = tree.remove(forKey: key)
                let expected = model.remove(forKey: key)
                #expect(removed?.position == expected?.position && removed?.value == expected?.value)
                if step % 200 == 0 {
                    expectMatches(tree, model, absentAfter: { $0 + 1 })
                }
            }
            #expect(tree.isEmpty)
        }
    }

    @Test func copiesKeepTheirContentsWhileTheOriginalChanges() {
        var random = SplitMix64(seed: 77)
        var tree = RankedTree<Int, Int>()
        var model = SortedModel<Int, Int>()
        var snapshots: [(tree: RankedTree<Int, Int>, model: SortedModel<Int, Int>)] = []
        for step in 0 ..< 8_000 {
            if step % 500 == 0 {
                snapshots.append((tree, model))
            }
            let key = 2 * random.below(4_000)
            if random.below(3) == 0 {
                tree.remove(forKey: key)
                model.remove(forKey: key)
            } else {
                let value = random.below(1_000)
                tree.insert(value, forKey: key)
                model.insert(value, forKey: key)
            }
        }
        expectMatches(tree, model, absentAfter: { $0 + 1 })
        for snapshot in snapshots {
            expectMatches(snapshot.tree, snapshot.model, absentAfter: { $0 + 1 })
        }

        // Changing a copy leaves the original and the other copies alone.
        for index in snapshots.indices where index % 4 == 1 {
            var changed = snapshots[index].tree
            var changedModel = snapshots[index].model
            for _ in 0 ..< 500 {
                let key = 2 * random.below(4_000)
                if random.below(2) == 0 {
                    changed.remove(forKey: key)
                    changedModel.remove(forKey: key)
                } else {
                    changed.insert(-1, forKey: key)
                    changedModel.insert(-1, forKey: key)
                }
            }
            expectMatches(changed, changedModel, absentAfter: { $0 + 1 })
        }
        expectMatches(tree, model, absentAfter: { $0 + 1 })
        for snapshot in snapshots {
            expectMatches(snapshot.tree, snapshot.model, absentAfter: { $0 + 1 })
        }
    }

    @Test func anIteratorKeepsTheEntriesItStartedWith() {
        let entries = (0 ..< 1_000).map { (key: $0, value: $0) }
        var tree = RankedTree(sorted: entries)
        var iterator = tree.makeIterator()
        for key in 0 ..< 500 {
            tree.remove(forKey: key)
        }
        for key in 1_000 ..< 1_500 {
            tree.insert(key, forKey: key)
        }
        var seen: [Int] = []
        while let entry = iterator.next() {
            seen.append(entry.key)
        }
        #expect(seen == Array(0 ..< 1_000))
        #expect(tree.map(\.key) == Array(500 ..< 1_500))
    }

    @Test func anUnsharedTreeChangesInPlace() {
        var tree = RankedTree(sorted: (0 ..< 1_000).map { (key: 2 * $0, value: $0) })
        weak let root = tree.root
        tree.insert(-1, forKey: 501)
        tree.remove(forKey: 600)
        #expect(root != nil && root === tree.root)

        let copy = tree
        tree.insert(-1, forKey: 503)
        #expect(root != nil && root !== tree.root)
        #expect(copy.value(forKey: 503) == nil)
        #expect(tree.value(forKey: 503) == -1)
    }

    @Test func replacingKeepsThePositionAndCount() {
        var tree = RankedTree(sorted: (0 ..< 300).map { (key: $0, value: "a") })
        #expect(tree.insert("b", forKey: 150) == (150, true))
        #expect(tree.count == 300)
        #expect(tree.value(forKey: 150) == "b")
        #expect(tree[150].value == "b")
        #expect(tree.rank(of: 150) == (150, true))
    }
}
