import Foundation
import Metrics
import Prometheus

/// The hub's metrics, in a Prometheus registry of the hub's own (not the
/// process's global `MetricsSystem`): `GET /metrics` of
/// ``HubServer/metricsRouter(_:)`` answers them in Prometheus's text
/// format (docs/Hub.md, "Deployment").
///
/// - `strata_hub_requests_total{route,method,status}`: requests answered.
/// - `strata_hub_request_duration_seconds{route}`: their latency, a
///   histogram.
/// - `strata_hub_pushes_total`, `strata_hub_pulls_total`: pushes answered
///   (a body sent again too) and pulls served.
/// - `strata_hub_merged_fields_total`: field changes of the pushes that
///   made a commit.
/// - `strata_hub_left_objects_total`: objects pulls named as having left
///   a device's view (docs/Hub.md, "Leaving a view").
/// - `strata_hub_refusals_total{code}`: refusals, by their `error` code.
/// - `strata_hub_pool_wait_seconds`: time each tenant transaction (of a
///   session, push, pull or long poll) waited for a pooled PostgreSQL
///   connection, a histogram.
public final class HubMetrics: Sendable {
    /// The registry the metrics are kept in.
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    /// Empty metrics.
    public init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
            .seconds(10), .seconds(30),
        ]
        self.factory = factory
    }

    /// The metrics in Prometheus's text format.
    public var text: String { registry.emitToString() }

    func request(route: String, method: String, status: Int, duration: Duration) {
        Counter(
            label: "strata_hub_requests_total",
            dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory
        ).increment()
        Timer(label: "strata_hub_request_duration_seconds", dimensions: [("route", route)], factory: factory)
            .recordNanoseconds(Self.nanoseconds(duration))
    }

    func pushed(mergedFields: Int) {
        Counter(label: "strata_hub_pushes_total", factory: factory).increment()
        Counter(label: "strata_hub_merged_fields_total", factory: factory).increment(by: mergedFields)
    }

    func pulled() { Counter(label: "strata_hub_pulls_total", factory: factory).increment() }

    func left(_ objects: Int) {
        Counter(label: "strata_hub_left_objects_total", factory: factory).increment(by: objects)
    }

    func refused(_ code: String) {
        Counter(label: "strata_hub_refusals_total", dimensions: [("code", code)], factory: factory).increment()
    }

    func poolWait(_ duration: Duration) {
        Timer(label: "strata_hub_pool_wait_seconds", factory: factory).recordNanoseconds(Self.nanoseconds(duration))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
