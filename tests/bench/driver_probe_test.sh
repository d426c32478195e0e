#!/usr/bin/env bash
# The driver probe on simcuda reads back the costs simcuda was told to
# charge: its SIMCUDA_CONF is what the defaults of tests/simcuda are
# updated from, so the round trip must hold.
# usage: driver_probe_test.sh PROBE SIMCUDA_DIR
set -u
probe=$1 simcuda=$2
conf="memory:2GiB,mem_create_us:13,mem_map_us:3,mem_set_access_us:20,mem_set_access_page_us:0.75"
conf+=",mem_unmap_us:15,mem_unmap_page_us:0.25,mem_release_us:9,mem_release_page_us:2"
conf+=",address_reserve_us:7,address_free_us:6,event_record_us:1.5,query_cost_us:0.5"
conf+=",stream_wait_us:2.5,sync_us:4,host_alloc_page_us:300,host_free_page_us:200,host_alloc_us:0"
conf+=",host_free_us:0"
out=$(LD_LIBRARY_PATH=$simcuda SIMCUDA_CONF=$conf "$probe" --json) || { echo "FAIL: the probe failed"; exit 1; }
got=$(grep -o '"simcuda_conf": "[^"]*"' <<<"$out" | sed 's/.*: "//; s/"$//')
[ -n "$got" ] || { echo "FAIL: no simcuda_conf in"; echo "$out"; exit 1; }
for pair in mem_create_us:13.00 mem_map_us:3.00 mem_set_access_us:20.00 mem_set_access_page_us:0.750 \
            mem_unmap_us:15.00 mem_unmap_page_us:0.250 mem_release_us:9.00 mem_release_page_us:2.000 \
            address_reserve_us:7.00 address_free_us:6.00 event_record_us:1.50 query_cost_us:0.50 \
            stream_wait_us:2.50 sync_us:4.00 host_alloc_page_us:300.0 host_free_page_us:200.0; do
  grep -q "\(^\|,\)$pair\(,\|$\)" <<<"$got" || { echo "FAIL: $pair not in $got"; exit 1; }
done
echo "ok: $got"
