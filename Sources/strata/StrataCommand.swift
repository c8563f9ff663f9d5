import ArgumentParser
import Foundation
import Strata

@main
struct StrataCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "strata",
        abstract: "Look inside and exercise Strata databases.",
        subcommands: [Demo.self]
    )
}
