import Foundation

/// Ends this process at once with SIGKILL, as a crash or a power cut
/// would: no cleanup, no flush. For the children of crash tests.
func killSelf() -> Never {
    kill(getpid(), SIGKILL)
    while true { pause() }
}
