/// Reports progress at least every 1% or 10,000 objects, and at the end.
struct ProgressCounter {
    let typeName: String
    let step: MigrationProgress.Step
    let total: Int
    let handler: MigrationProgressHandler?
    private var completed = 0
    var completedCount: Int { completed }
    private var reported = 0
    private var nextReport: Int
    private let interval: Int

    init(typeName: String, step: MigrationProgress.Step, total: Int, handler: MigrationProgressHandler?) {
        self.typeName = typeName
        self.step = step
        self.total = total
        self.handler = handler
        interval = Swift.max(1, Swift.min(10_000, total / 100))
        nextReport = interval
        handler?(MigrationProgress(typeName: typeName, step: step, completed: 0, total: total))
    }

    @inline(__always)
    mutating func advance() {
        completed += 1
        if completed == nextReport {
            nextReport += interval
            report()
        }
    }

    private mutating func report() {
        reported = completed
        handler?(
            MigrationProgress(typeName: typeName, step: step, completed: completed, total: Swift.max(total, completed)))
    }

    /// Reports the end, unless the last report already said it.
    mutating func finish() {
        if completed != reported { report() }
    }
}
