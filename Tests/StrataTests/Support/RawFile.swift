import Foundation
import Testing

@testable import Strata

/// A file as bytes and as LMDB databases, past every check of Strata's:
/// to look at what Strata wrote, and to damage it.
enum RawFile {
    static func contents(_ path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path)
    }

    static func size(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber).intValue
    }

    /// Runs `body` with the storage layer's environment of `path` alone,
    /// past every check of Strata's, holding the lock that opening named
    /// databases needs. A Database open on `path` in this process shares
    /// the environment only if it is `.noSync` too.
    static func withEnvironment<T>(_ path: String, _ body: (Environment) throws -> T) throws -> T {
        var options = EnvironmentOptions()
        options.noSync = true
        let environment = try Environment.open(path: path, options: options)
        defer { environment.release() }
        environment.setupLock.lock()
        defer { environment.setupLock.unlock() }
        return try body(environment)
    }

    /// Runs `body` in a write transaction of the storage layer alone, past
    /// every check of Strata's. No Database may be open on `path`: the
    /// environment is released before this returns.
    static func withWrite<T>(_ path: String, _ body: (LMDBTransaction) throws -> T) throws -> T {
        try withEnvironment(path) { try $0.withWriteTransaction(body) }
    }

    /// Rewrites the catalog's JSON through the storage layer.
    static func rewriteCatalog(_ path: String, _ change: (inout [String: Any]) throws -> Void) throws {
        try withWrite(path) { txn in
            let meta = try #require(try txn.openDatabase(FileLayout.meta, create: false))
            let bytes = try #require(try txn.get(meta, FileLayout.MetaKey.catalog))
            var json = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
            try change(&json)
            try txn.put(
                meta, FileLayout.MetaKey.catalog,
                Array(try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])))
        }
    }

    /// The stored bytes of the record of `type` with Int primary key `id`,
    /// past every check of Strata's. No Database may be open on `path`.
    static func record(_ path: String, type name: String, id: Int64) throws -> [UInt8]? {
        try withWrite(path) { txn in
            let meta = try #require(try CatalogStore.openMeta(txn, create: false))
            let catalog = try #require(try CatalogStore(meta: meta, path: path).catalog(txn))
            let type = try #require(catalog[type: name])
            let records = try #require(try txn.openDatabase(type.recordsDatabase, create: false))
            return try key(id).withUnsafeBytes { try txn.get(records, $0) }.map { Array($0) }
        }
    }

    /// How many objects of `type` the file holds, past every check of
    /// Strata's. No Database may be open on `path`.
    static func objectCount(_ path: String, type name: String) throws -> Int {
        try withWrite(path) { txn in
            let meta = try #require(try CatalogStore.openMeta(txn, create: false))
            let catalog = try #require(try CatalogStore(meta: meta, path: path).catalog(txn))
            let type = try #require(catalog[type: name])
            let records = try #require(try txn.openDatabase(type.recordsDatabase, create: false))
            return try txn.entryCount(records)
        }
    }

    /// The stored key of an Int primary key.
    static func key(_ id: Int64) -> [UInt8] {
        let writer = ByteWriter()
        _ = KeyCodec.appendPrimaryKey(.int(id), type: .int, to: writer)
        return writer.bytes
    }
}
