//! The standard health service `grpc.health.v1.Health/Check` (k6's `client.healthCheck()`,
//! and the built-in target's answer): its two messages, without a `.proto` to load.

/// The method's HTTP/2 path.
pub const CHECK: &str = "/grpc.health.v1.Health/Check";

/// `HealthCheckResponse.ServingStatus` values (k6's `grpc.HealthCheck*` constants).
pub const UNKNOWN: i32 = 0;
pub const SERVING: i32 = 1;
pub const NOT_SERVING: i32 = 2;
pub const SERVICE_UNKNOWN: i32 = 3;

/// `grpc.health.v1.HealthCheckRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    #[prost(string, tag = "1")]
    pub service: String,
}

/// `grpc.health.v1.HealthCheckResponse` (`status` is the ServingStatus enum).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    #[prost(int32, tag = "1")]
    pub status: i32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn wire_format_is_the_standard_one() {
        let q = Request {
            service: "a".into(),
        };
        assert_eq!(q.encode_to_vec(), b"\x0a\x01a");
        let r = Response::decode(&b"\x08\x02"[..]).unwrap();
        assert_eq!(r.status, NOT_SERVING);
    }
}
