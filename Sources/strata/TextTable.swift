/// Columns of text, each as wide as its widest cell among the rows it was
/// measured on; a later, wider cell pushes the rest of its line right.
struct TextTable {
    private(set) var widths: [Int] = []

    init(measuring rows: [[String]]) {
        for row in rows { measure(row) }
    }

    mutating func measure(_ row: [String]) {
        for (column, cell) in row.enumerated() {
            if column == widths.count { widths.append(0) }
            widths[column] = max(widths[column], cell.count)
        }
    }

    /// The cells, two spaces apart, without trailing spaces.
    func line(_ row: [String], indent: String = "") -> String {
        var text = indent
        for (column, cell) in row.enumerated() {
            if column > 0 { text += "  " }
            text += cell
            if column < row.count - 1, column < widths.count {
                text += String(repeating: " ", count: max(0, widths[column] - cell.count))
            }
        }
        while text.last == " " { text.removeLast() }
        return text
    }
}
