// TextExposition: metric families in the Prometheus text exposition format 0.0.4, byte for byte
// as Go's client_golang (expfmt.MetricFamilyToText) writes them, so that a scrape of devmgr
// reads as a kubelet's, down to the label values a query matches: the bucket bounds (`le`),
// written as Go writes a float64 ("0.23535468936502524", where 16 significant digits would give
// "0.2353546893650252").
//
// Per family: "# HELP name help" with backslashes and line breaks escaped, "# TYPE name type",
// then each metric in the order given: "name{label="value",...} value", label values escaped
// (backslash, double quote, line break), values as FormatGoFloat except that 0 is "0" whatever
// its sign. A histogram writes its cumulative buckets (with the "+Inf" one, added from the
// sample count if the buckets lack it), then _sum, then _count; a summary its quantiles, _sum
// and _count. A family without metrics is left out, as client_golang's registry leaves it out.
// Timestamps are not written (devmgr sets none).
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace devmgr {

std::string TextExposition(const std::vector<prometheus::MetricFamily>& families);

}  // namespace devmgr
