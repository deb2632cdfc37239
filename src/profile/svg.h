// SPDX-License-Identifier: MIT
// A small SVG writer for the charts the tools draw (bench's roofline, the profile's time bars):
// shapes and text appended to a string, with every text XML-escaped. Plain SVG 1.1, no scripts
// or styles, so a browser, an image viewer or a Markdown page shows it as it is.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace nt::profile {

// s with &, <, > and " as XML entities.
std::string xml_escape(const std::string& s);

class Svg {
 public:
  Svg(double width, double height);

  void line(double x1, double y1, double x2, double y2, const char* stroke, double width = 1.0);
  void polyline(const std::vector<std::pair<double, double>>& points, const char* stroke, double width);
  // A closed, filled shape (a band between two curves); opacity in [0, 1].
  void polygon(const std::vector<std::pair<double, double>>& points, const char* fill, double opacity);
  // A line drawn at an opacity, dashed when dash is not empty ("4 3": on, off).
  void polyline(const std::vector<std::pair<double, double>>& points, const char* stroke, double width,
                double opacity, const char* dash = "");
  // A rectangle, with a tooltip when title is not empty.
  void rect(double x, double y, double w, double h, const char* fill, const std::string& title = "");
  // A marker of class cls (a chart's points can be counted by it), with a tooltip.
  void circle(double cx, double cy, double r, const char* fill, const char* cls, const std::string& title);
  // anchor: start, middle or end; rotate: degrees about (x, y).
  void text(double x, double y, const std::string& s, double size = 12.0, const char* anchor = "start",
            const char* fill = "#222222", bool bold = false, double rotate = 0.0);
  // Raw markup appended as it is (for callers that build their own elements).
  void raw(const std::string& markup) { body_ += markup; }
  // The document, closed.
  std::string finish() const;

 private:
  std::string body_;
  double width_, height_;
};

// A logarithmic axis: values in [lo, hi] (both > 0) onto pixels from p_lo to p_hi.
struct LogAxis {
  double lo, hi, p_lo, p_hi;
  double operator()(double v) const;
};

// A linear axis: values in [lo, hi] (lo < hi) onto pixels from p_lo to p_hi.
struct LinearAxis {
  double lo, hi, p_lo, p_hi;
  double operator()(double v) const;
};

// Round tick values covering [lo, hi]: multiples of 1, 2 or 5 times a power of ten, about
// `target` of them, the first at or below lo and the last at or above hi.
std::vector<double> nice_ticks(double lo, double hi, int target);

// The decade below v's and the decade above it (1 -> 1 and 1; 0.3 -> 0.1 and 1).
double decade_below(double v);
double decade_above(double v);

}  // namespace nt::profile
