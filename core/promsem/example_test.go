package promsem_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/distsem/distsem/core/promsem"
	"github.com/distsem/distsem/core/redissem"
	"github.com/distsem/distsem/sqlmw"
)

// sqlmw's queries take their permits straight from the semaphore, so its
// observer sees them: the same collector serves sqlmw and direct core use.
func Example_sqlmw() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	col := promsem.New(promsem.WithKeys("orders-db"))
	sem := redissem.New(rdb, "orders-db", 4, redissem.WithObserver(col))
	defer sem.Close()
	fleet := promsem.NewStatsCollector(promsem.Single(sem), promsem.WithKeys("orders-db"))
	reg := prometheus.NewRegistry()
	reg.MustRegister(col, fleet)

	db, err := sqlmw.Open("sqlite", "file::memory:", sem)
	if err != nil {
		panic(err)
	}
	defer db.Close()
	for range 3 {
		if _, err := db.ExecContext(context.Background(), "SELECT 1"); err != nil {
			panic(err)
		}
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		switch mf.GetName() {
		case "distsem_sem_acquire_wait_seconds":
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "orders-db" && m.GetLabel()[1].GetValue() == "acquired" {
					fmt.Println("permits granted:", m.GetHistogram().GetSampleCount())
				}
			}
		case "distsem_sem_fleet_limit":
			fmt.Println("fleet limit:", mf.GetMetric()[0].GetGauge().GetValue())
		}
	}
	fmt.Println("fleet series:", testutil.CollectAndCount(fleet))
	// Output:
	// permits granted: 3
	// fleet limit: 4
	// fleet series: 4
}
