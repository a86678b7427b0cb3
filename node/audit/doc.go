// Package audit carries a peer's audit entries (the API writes it
// received) into the replicated audit log: the API records each entry
// here without waiting, and Run proposes them through Raft in batches.
// Entries still buffered when the peer dies are lost; a full buffer drops
// new entries and counts them (svc_audit_dropped_total).
package audit
