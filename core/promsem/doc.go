// Package promsem exports a distsem semaphore's metrics to Prometheus, for
// every user of core: sqlmw (whose queries take permits straight from the
// semaphore), direct core users, and the HTTP, gRPC and Echo adapters
// alike. It has two collectors.
//
// Collector is a core.Observer: pass it to the semaphore with
// core.WithObserver and it exports what this process sees:
//
//	distsem_sem_acquire_wait_seconds{key,result}  histogram: time queued, result "acquired" or "abandoned"
//	distsem_sem_in_use{key}                       gauge: permit weight held by this process
//	distsem_sem_waiting{key}                      gauge: Acquire calls of this process in the queue
//	distsem_sem_lost_leases_total{key}            counter: leases lost while held
//	distsem_sem_backend_errors_total{kind}        counter: backend failures, by kind
//	distsem_sem_level_in_use{level}               gauge: permit weight held, by priority level
//	distsem_sem_level_waiting{level}              gauge: Acquire calls queued, by priority level
//	distsem_sem_flow_waiting{flow}                gauge: Acquire calls queued, by flow (WithFlows)
//	distsem_sem_flow_wait_seconds{flow,result}    histogram: time queued, by flow (WithFlows)
//
// kind is "timeout", "network", "server" (an error reply from Redis, such
// as READONLY or CLUSTERDOWN), "closed" or "other". The wait histogram
// counts every grant: one that did not queue is a sample of 0.
//
// StatsCollector reads the fleet-wide state of named keys from the
// semaphore's Stats (one Redis round trip per key and scrape, all bounded
// by one timeout) and exports it:
//
//	distsem_sem_fleet_limit{key}       gauge: the limit in force
//	distsem_sem_fleet_in_use{key}      gauge: permit weight held, all processes
//	distsem_sem_fleet_waiting{key}     gauge: Acquire calls queued, all processes
//	distsem_sem_fleet_stats_errors_total{key}  counter: Stats calls that failed or timed out
//	distsem_sem_fleet_level_in_use{key,level}  gauge: permit weight held, by priority level
//	distsem_sem_fleet_level_waiting{key,level} gauge: Acquire calls queued, by priority level
//	distsem_sem_fleet_backlogged_queues{key}   gauge: flow queues with waiters
//
// The level and flow series appear once a semaphore has flows or levels
// (core.WithFlow, core.WithLevel); the fleet's level series then cover
// every level up to the highest seen busy.
//
// # Bounded labels
//
// Keys come from requests (paths, tenants, SQL comments): only the keys
// named with WithKeys (the overrides table given to core.WithLimits, or
// the semaphore's name for a plain semaphore) get a key label value of
// their own; every other key is counted under "other". Label values are
// cut to MaxLabelLen bytes. All series of keys exist from the start, at
// zero. Flows are bounded the same way: only the flows named with
// WithFlows get a flow label value of their own.
//
//	col := promsem.New(promsem.WithKeys("reports", "orders-db"))
//	sem := redissem.New(rdb, "orders-db", 8, redissem.WithObserver(col))
//	fleet := promsem.NewStatsCollector(sem, promsem.WithKeys("orders-db"))
//	prometheus.MustRegister(col, fleet)
//
// This package is apart from core so that core never imports Prometheus.
package promsem
