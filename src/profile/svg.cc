// SPDX-License-Identifier: MIT
#include "profile/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nt::profile {

namespace {
// A number for an attribute: two decimals are finer than a pixel.
std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}
}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

Svg::Svg(double width, double height) : width_(width), height_(height) {
  rect(0, 0, width, height, "#ffffff");
}

void Svg::line(double x1, double y1, double x2, double y2, const char* stroke, double width) {
  body_ += "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
           "\" stroke=\"" + stroke + "\" stroke-width=\"" + num(width) + "\"/>\n";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, const char* stroke, double width) {
  body_ += "<polyline fill=\"none\" stroke=\"" + std::string(stroke) + "\" stroke-width=\"" + num(width) +
           "\" points=\"";
  for (const auto& [x, y] : points) body_ += num(x) + "," + num(y) + " ";
  body_ += "\"/>\n";
}

void Svg::polygon(const std::vector<std::pair<double, double>>& points, const char* fill, double opacity) {
  body_ +=
      "<polygon fill=\"" + std::string(fill) + "\" fill-opacity=\"" + num(opacity) + "\" stroke=\"none\" points=\"";
  for (const auto& [x, y] : points) body_ += num(x) + "," + num(y) + " ";
  body_ += "\"/>\n";
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, const char* stroke, double width,
                   double opacity, const char* dash) {
  body_ += "<polyline fill=\"none\" stroke=\"" + std::string(stroke) + "\" stroke-width=\"" + num(width) +
           "\" stroke-opacity=\"" + num(opacity) + "\"";
  if (*dash) body_ += " stroke-dasharray=\"" + std::string(dash) + "\"";
  body_ += " points=\"";
  for (const auto& [x, y] : points) body_ += num(x) + "," + num(y) + " ";
  body_ += "\"/>\n";
}

void Svg::rect(double x, double y, double w, double h, const char* fill, const std::string& title) {
  body_ += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) +
           "\" fill=\"" + fill + "\"";
  if (title.empty()) {
    body_ += "/>\n";
  } else {
    body_ += "><title>" + xml_escape(title) + "</title></rect>\n";
  }
}

void Svg::circle(double cx, double cy, double r, const char* fill, const char* cls, const std::string& title) {
  body_ += "<circle class=\"" + std::string(cls) + "\" cx=\"" + num(cx) + "\" cy=\"" + num(cy) + "\" r=\"" +
           num(r) + "\" fill=\"" + fill + "\" stroke=\"#000000\" stroke-width=\"0.5\"><title>" +
           xml_escape(title) + "</title></circle>\n";
}

void Svg::text(double x, double y, const std::string& s, double size, const char* anchor, const char* fill,
               bool bold, double rotate) {
  body_ += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-family=\"sans-serif\" font-size=\"" + num(size) +
           "\" text-anchor=\"" + anchor + "\" fill=\"" + fill + "\"";
  if (bold) body_ += " font-weight=\"bold\"";
  if (rotate != 0.0) body_ += " transform=\"rotate(" + num(rotate) + " " + num(x) + " " + num(y) + ")\"";
  body_ += ">" + xml_escape(s) + "</text>\n";
}

std::string Svg::finish() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         num(width_) + "\" height=\"" + num(height_) + "\" viewBox=\"0 0 " + num(width_) + " " + num(height_) +
         "\">\n" + body_ + "</svg>\n";
}

double LogAxis::operator()(double v) const {
  const double t = (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  return p_lo + t * (p_hi - p_lo);
}

double LinearAxis::operator()(double v) const { return p_lo + (v - lo) / (hi - lo) * (p_hi - p_lo); }

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;  // one value: a unit range around it
  const double raw = (hi - lo) / double(std::max(1, target));
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double v = std::floor(lo / step) * step; ticks.size() < 1000; v += step) {
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
    if (v >= hi - step * 1e-9) break;
  }
  return ticks;
}

// (A hair of tolerance: 1000 must stay 1000, not 10000, after log10's rounding.)
double decade_below(double v) { return std::pow(10.0, std::floor(std::log10(v) + 1e-9)); }
double decade_above(double v) { return std::pow(10.0, std::ceil(std::log10(v) - 1e-9)); }

}  // namespace nt::profile
