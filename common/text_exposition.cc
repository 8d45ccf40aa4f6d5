#include "common/text_exposition.h"

#include <prometheus/metric_type.h>

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/go_float.h"

namespace devmgr {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;

// expfmt's escaping: the help text's backslashes and line breaks; a label value's quotes too.
void AppendEscaped(std::string& out, absl::string_view text, bool quotes) {
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void AppendValue(std::string& out, double value) {
  // expfmt writes -0 as 0; every other value as strconv's shortest %g.
  if (value == 0) {
    out += '0';
  } else {
    out += FormatGoFloat(value);
  }
}

// One sample line: the name with its suffix, the metric's labels and, for a bucket or a
// quantile, the label `bound_label` with the value `*bound`.
void AppendSample(std::string& out, absl::string_view name, absl::string_view suffix,
                  const ClientMetric& metric, double value, absl::string_view bound_label = {},
                  const double* bound = nullptr) {
  absl::StrAppend(&out, name, suffix);
  if (!metric.label.empty() || bound != nullptr) {
    out += '{';
    absl::string_view separator;
    for (const ClientMetric::Label& label : metric.label) {
      absl::StrAppend(&out, separator, label.name, "=\"");
      AppendEscaped(out, label.value, /*quotes=*/true);
      out += '"';
      separator = ",";
    }
    if (bound != nullptr) {
      absl::StrAppend(&out, separator, bound_label, "=\"");
      AppendValue(out, *bound);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  AppendValue(out, value);
  out += '\n';
}

absl::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::Counter:
      return "counter";
    case MetricType::Gauge:
      return "gauge";
    case MetricType::Histogram:
      return "histogram";
    case MetricType::Summary:
      return "summary";
    case MetricType::Untyped:
      break;
  }
  return "untyped";
}

void AppendHistogram(std::string& out, absl::string_view name, const ClientMetric& metric) {
  const ClientMetric::Histogram& histogram = metric.histogram;
  bool infinity_seen = false;
  for (const ClientMetric::Bucket& bucket : histogram.bucket) {
    AppendSample(out, name, "_bucket", metric, static_cast<double>(bucket.cumulative_count), "le",
                 &bucket.upper_bound);
    infinity_seen = infinity_seen || std::isinf(bucket.upper_bound);
  }
  if (!infinity_seen) {
    const double infinity = std::numeric_limits<double>::infinity();
    AppendSample(out, name, "_bucket", metric, static_cast<double>(histogram.sample_count), "le",
                 &infinity);
  }
  AppendSample(out, name, "_sum", metric, histogram.sample_sum);
  AppendSample(out, name, "_count", metric, static_cast<double>(histogram.sample_count));
}

void AppendSummary(std::string& out, absl::string_view name, const ClientMetric& metric) {
  const ClientMetric::Summary& summary = metric.summary;
  for (const ClientMetric::Quantile& quantile : summary.quantile) {
    AppendSample(out, name, "", metric, quantile.value, "quantile", &quantile.quantile);
  }
  AppendSample(out, name, "_sum", metric, summary.sample_sum);
  AppendSample(out, name, "_count", metric, static_cast<double>(summary.sample_count));
}

}  // namespace

std::string TextExposition(const std::vector<prometheus::MetricFamily>& families) {
  std::string out;
  for (const prometheus::MetricFamily& family : families) {
    if (family.metric.empty()) continue;
    absl::StrAppend(&out, "# HELP ", family.name, " ");
    AppendEscaped(out, family.help, /*quotes=*/false);
    absl::StrAppend(&out, "\n# TYPE ", family.name, " ", TypeName(family.type), "\n");
    for (const ClientMetric& metric : family.metric) {
      switch (family.type) {
        case MetricType::Counter:
          AppendSample(out, family.name, "", metric, metric.counter.value);
          break;
        case MetricType::Gauge:
          AppendSample(out, family.name, "", metric, metric.gauge.value);
          break;
        case MetricType::Histogram:
          AppendHistogram(out, family.name, metric);
          break;
        case MetricType::Summary:
          AppendSummary(out, family.name, metric);
          break;
        case MetricType::Untyped:
          AppendSample(out, family.name, "", metric, metric.untyped.value);
          break;
      }
    }
  }
  return out;
}

}  // namespace devmgr
