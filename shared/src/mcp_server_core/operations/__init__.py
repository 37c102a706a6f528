"""What operators see: the audit trail, metrics, traces and health."""
