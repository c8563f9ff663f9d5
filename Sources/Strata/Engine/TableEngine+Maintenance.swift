extension TableEngine {
    /// The problems of one type's records, indexes and links: records and
    /// keys that do not decode (links, lists and embedded objects included,
    /// by their types), objects missing from an index, index entries that
    /// name no object or file one under another value, links to objects
    /// that do not exist, links missing from the backlinks and backlinks
    /// that name no such link. A kept type's indexes and links are not
    /// checked (nothing keeps them up to date).
    func verify(_ table: ObjectTable, kept: Bool) throws -> [String] {
        var problems: [String] = []
        func note(_ problem: String) {
            // A badly damaged file could list millions; the first ones tell.
            if problems.count < 100 {
                problems.append(problem)
            } else if problems.count == 100 {
                problems.append("(more problems in '\(table.name)' not listed)")
            }
        }
        let indexKey = ByteWriter(capacity: 64)
        var objects = 0
        try lmdb.withCursor(table.records) { records in
            var entry = try records.first()
            while let (key, record) = entry {
                objects += 1
                let view: RecordView
                do {
                    view = try table.validatedView(key: key, record: record)
                } catch let error as StrataError {
                    note(error.message)
                    entry = try records.next()
                    continue
                }
                if !kept && table.hasCompositeFields, let base = view.bytes.baseAddress {
                    for field in table.fields where field.type.isComposite {
                        guard let offset = view.fieldOffset(forField: field.id, expectedAt: field.position),
                            let problem = CompositeCodec.problem(field, base, offset, view.bytes.count)
                        else { continue }
                        note(
                            "The object of '\(table.name)' with key \(table.describeKey(key)) does not decode: \(problem)."
                        )
                    }
                }
                if !kept {
                    for (field, targets) in zip(table.linkFields, linkKeys(table, view)) {
                        let targetTable = links.tables[field.target ?? ""]
                        for target in targets {
                            let targetKey = target.withUnsafeBytes {
                                targetTable?.describeKey($0) ?? "\($0.count) bytes"
                            }
                            if let targetTable,
                                try target.withUnsafeBytes({ try lmdb.get(targetTable.records, $0) }) == nil
                            {
                                note(
                                    "The object of '\(table.name)' with key \(table.describeKey(key)) links through '\(field.name)' to the '\(targetTable.name)' \(targetKey), which does not exist."
                                )
                            }
                            let filed = try field.backlinks.map { backlinks in
                                try target.withUnsafeBytes { target in
                                    try lmdb.withCursor(backlinks) { try $0.seek(exactly: target, value: key) != nil }
                                }
                            }
                            if filed == false {
                                note(
                                    "The backlinks of '\(table.name).\(field.name)' lack the link of the object with key \(table.describeKey(key)) to \(targetKey)."
                                )
                            }
                        }
                    }
                    for field in table.indexedFields {
                        indexKey.removeAll()
                        FileLayout.appendIndexKey(table.value(at: field.position, in: view), to: indexKey)
                        let found = try indexKey.withUnsafeBytes { indexBytes in
                            try lmdb.withCursor(field.index!) { try $0.seek(exactly: indexBytes, value: key) != nil }
                        }
                        if !found {
                            note(
                                "The object of '\(table.name)' with key \(table.describeKey(key)) is missing from the index on '\(field.name)'."
                            )
                        }
                    }
                }
                entry = try records.next()
            }
        }
        guard !kept else { return problems }
        for field in table.linkFields {
            guard let backlinks = field.backlinks, let targetTable = links.tables[field.target ?? ""] else { continue }
            try lmdb.withCursor(backlinks) { cursor in
                var entry = try cursor.first()
                while let (target, source) = entry {
                    let stored = try lmdb.get(table.records, source).flatMap { try? RecordView(validating: $0) }
                    let targetBytes = Array(target)
                    if let stored,
                        !linkKeys(table, stored)[table.linkFields.firstIndex { $0 === field }!].contains(targetBytes)
                    {
                        note(
                            "The backlinks of '\(table.name).\(field.name)' say the object with key \(table.describeKey(source)) links to the '\(targetTable.name)' \(targetTable.describeKey(target)), but it does not."
                        )
                    } else if stored == nil {
                        note(
                            "The backlinks of '\(table.name).\(field.name)' name an object with key \(table.describeKey(source)) that does not exist."
                        )
                    }
                    entry = try cursor.next()
                }
            }
        }
        for field in table.indexedFields {
            var entries = 0
            try lmdb.withCursor(field.index!) { index in
                var entry = try index.first()
                while let (storedIndexKey, objectKey) = entry {
                    entries += 1
                    if let record = try lmdb.get(table.records, objectKey) {
                        if let view = try? RecordView(validating: record) {
                            indexKey.removeAll()
                            FileLayout.appendIndexKey(table.value(at: field.position, in: view), to: indexKey)
                            if indexKey.withUnsafeBytes({ KeyCodec.compare($0, storedIndexKey) }) != 0 {
                                note(
                                    "The index on '\(table.name).\(field.name)' files the object with key \(table.describeKey(objectKey)) under another value than it has."
                                )
                            }
                        }
                    } else {
                        note(
                            "The index on '\(table.name).\(field.name)' names an object with key \(table.describeKey(objectKey)) that does not exist."
                        )
                    }
                    entry = try index.next()
                }
            }
            if entries != objects && problems.isEmpty {
                note("The index on '\(table.name).\(field.name)' has \(entries) entries for \(objects) objects.")
            }
        }
        return problems
    }

    /// Writes a table's records again in key order into the emptied table,
    /// reading them from `source` (a read transaction begun before this
    /// one), without the fields of removed properties, and rebuilds its
    /// indexes. Each object keeps its effective schema version; a kept
    /// type's records, which no schema of this app reads, are copied as
    /// they are.
    func repack(_ table: ObjectTable, from source: LMDBTransaction) throws {
        try emptyTable(table, repacking: true)
        let encoder = self.encoder
        try source.withCursor(table.records) { cursor in
            var entry = try cursor.first()
            while let (key, record) = entry {
                let view = try table.validatedView(key: key, record: record)
                if table.type.isKept {
                    try write(table, key: key, before: view, after: record, entries: .added)
                } else {
                    try encoder.encode(
                        table: table, schemaVersion: view.effectiveSchemaVersion, automaticKey: .keep, base: view
                    ) { _ in .stored }
                    _ = try encoder.record.withUnsafeBytes { record in
                        try write(table, key: key, before: view, after: record, entries: .added)
                    }
                }
                entry = try cursor.next()
            }
        }
    }
}
