/// The relationships' data (scenarios i to m): the `n` people of
/// ``Dataset`` and `n` dogs, `Dog(id: int primary key, name: string,
/// owner: link to Person, delete rule cascade)`, in two files:
///
/// - the owners' file (i, j, k): dog `d` belongs to person `d % (n / 10)`,
///   so each of the first tenth of the people owns ten dogs, spread over
///   the whole table (their ids are `n / 10` apart), as dogs that were
///   added over the years would be;
/// - the kennel's file (l, m): person 0 owns 100k dogs (every
///   `n / 100k`-th; all of them at 100k), the others belong to people
///   1 to `n / 10`.
///
/// Scenarios n and o add a property to the people of ``Dataset`` alone.
public enum Dogs {
    /// The two files.
    enum File: String {
        case owners
        case kennel
    }

    /// How many people own dogs in the owners' file.
    static func owners(_ n: Int) -> Int { max(1, n / 10) }

    static func name(_ dog: Int) -> String { Dataset.firstName(dog) }

    /// The owner of dog `dog` in `file`.
    static func owner(_ dog: Int, n: Int, in file: File) -> Int {
        switch file {
        case .owners: dog % owners(n)
        case .kennel: isChild(dog, n: n) ? 0 : 1 + dog % owners(n)
        }
    }

    /// How many dogs person 0 owns in the kennel's file: 100k, or all of
    /// them when there are fewer.
    static func children(_ n: Int) -> Int { min(100_000, n) }

    private static func spacing(_ n: Int) -> Int { n / children(n) }

    static func isChild(_ dog: Int, n: Int) -> Bool {
        dog % spacing(n) == 0 && dog / spacing(n) < children(n)
    }

    /// The ids of person 0's dogs in the kennel's file, in order.
    static func childIDs(_ n: Int) -> [Int] { (0 ..< children(n)).map { $0 * spacing(n) } }

    /// The seeded dogs whose owner scenario i follows (and j looks up).
    static func followedDogs(_ n: Int) -> [Int] {
        var generator = SplitMix64(seed: 11)
        return (0 ..< 100_000).map { _ in Int(generator.next() % UInt64(n)) }
    }

    /// The seeded people whose dogs scenario k asks for.
    static func queriedOwners(_ n: Int) -> [Int] {
        var generator = SplitMix64(seed: 13)
        return (0 ..< 10_000).map { _ in Int(generator.next() % UInt64(owners(n))) }
    }

    /// What a backlink query adds to its checksum for one dog.
    static func backlinkSum(id: Int, name: String) -> UInt64 { UInt64(id) &+ UInt64(name.utf8.count) }

    /// The checksum of the dogs left after a delete: their count, the sum
    /// of their ids, and how many still link to person 0 (none).
    static func afterDelete(count: Int, idSum: Int, linkingToZero: Int) -> UInt64 {
        UInt64(idSum) &+ UInt64(count) << 40 &+ UInt64(linkingToZero) << 60
    }

    static func expected(_ scenario: Scenario, n: Int) -> UInt64 {
        switch scenario {
        case .followLinks, .ownerLookups:
            return UInt64(followedDogs(n).reduce(0) { $0 + Dataset.age(owner($1, n: n, in: .owners)) })
        case .backlinks:
            var sum: UInt64 = 0
            for person in queriedOwners(n) {
                for dog in stride(from: person, to: n, by: owners(n)) { sum &+= backlinkSum(id: dog, name: name(dog)) }
            }
            return sum
        case .cascadeDelete, .directDelete:
            let children = childIDs(n)
            return afterDelete(
                count: n - children.count, idSum: (0 ..< n).reduce(0, +) - children.reduce(0, +), linkingToZero: 0)
        default:
            // n and o: every person's age, read with the new property null.
            return UInt64((0 ..< n).reduce(0) { $0 + Dataset.age($1) })
        }
    }
}
