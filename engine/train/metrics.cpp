#include "engine/train/metrics.hpp"

#include "engine/io/atomic_file.hpp"
#include "engine/io/input_file.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <stdexcept>

namespace helios::train {

namespace fs = std::filesystem;

MetricsWriter::MetricsWriter(fs::path path, uint64_t resumeStep) : path_(std::move(path)) {
  if (resumeStep == 0 || !fs::exists(path_)) {
    io::writeFileAtomically(path_, std::string_view()); // a fresh, empty log (a symlink keeps its place)
    return;
  }
  io::requireRegularFile(path_, "metrics file");
  std::ifstream in(path_);
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("step")) continue; // a torn last line from a crash
    if (j["step"].get<uint64_t>() > resumeStep) continue;
    kept += line + "\n";
    history_.push_back(std::move(j));
  }
  in.close();
  io::writeFileAtomically(path_, kept);
}

void MetricsWriter::add(const nlohmann::ordered_json& record) {
  const std::string line = record.dump();
  buffer_ += line + "\n";
  history_.push_back(nlohmann::json::parse(line));
}

void MetricsWriter::flush() {
  if (buffer_.empty()) return;
  std::ofstream out(path_, std::ios::app);
  out << buffer_;
  if (!out) throw std::runtime_error(fmt::format("{}: write failed", path_.string()));
  buffer_.clear();
}

void curvesFromHistory(const std::vector<nlohmann::json>& history, std::vector<CurvePoint>& train,
                       std::vector<CurvePoint>& val) {
  for (const auto& r : history) {
    const double step = r.value("step", 0.0);
    if (r.contains("loss") && r["loss"].is_number()) train.push_back({step, r["loss"].get<double>()});
    if (r.contains("val_loss") && r["val_loss"].is_number())
      val.push_back({step, r["val_loss"].get<double>()});
  }
}

namespace {

// 1, 2 or 5 times a power of ten, so that about `target` ticks span [lo, hi].
double niceStep(double lo, double hi, int target) {
  const double raw = (hi - lo) / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string label(double v, double step) {
  if (std::fabs(v) >= 10000) return fmt::format("{:.0f}k", v / 1000);
  if (step >= 1) return fmt::format("{:.0f}", v);
  const int digits = static_cast<int>(std::ceil(-std::log10(step)));
  return fmt::format("{:.{}f}", v, std::max(digits, 0));
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

} // namespace

void writeLossSvg(const fs::path& path, const std::vector<CurvePoint>& train,
                  const std::vector<CurvePoint>& val, const std::string& title) {
  const double W = 800, H = 480, L = 70, R = 20, T = 40, B = 55;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const auto* pts : {&train, &val})
    for (const auto& p : *pts) {
      if (!std::isfinite(p.loss)) continue;
      x0 = std::min(x0, p.step), x1 = std::max(x1, p.step);
      y0 = std::min(y0, p.loss), y1 = std::max(y1, p.loss);
    }
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 - x0 < 1) x1 = x0 + 1;
  if (y1 - y0 < 1e-3) y0 -= 0.5, y1 += 0.5;
  y0 = std::max(0.0, y0 - 0.05 * (y1 - y0));
  y1 += 0.05 * (y1 - y0);
  const double xs = niceStep(x0, x1, 8), ys = niceStep(y0, y1, 6);
  x0 = std::floor(x0 / xs) * xs, x1 = std::ceil(x1 / xs) * xs;
  y0 = std::floor(y0 / ys) * ys, y1 = std::ceil(y1 / ys) * ys;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };

  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
                              "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"12\">\n",
                              W, H, W, H);
  s += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", W, H);
  s += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n", W / 2,
                   escape(title));
  // grid + ticks
  for (double x = x0; x <= x1 + xs * 1e-9; x += xs) {
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#e5e5e5\"/>\n", px(x), T,
                     px(x), H - B);
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"black\"/>\n", px(x),
                     H - B, px(x), H - B + 5);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(x), H - B + 18,
                     label(x, xs));
  }
  for (double y = y0; y <= y1 + ys * 1e-9; y += ys) {
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>\n", L, py(y),
                     W - R, py(y));
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"black\"/>\n", L - 5,
                     py(y), L, py(y));
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", L - 8, py(y) + 4,
                     label(y, ys));
  }
  // axes + labels
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", L, H - B, W - R,
                   H - B);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", L, T, L, H - B);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n", (L + W - R) / 2, H - 12);
  s += fmt::format("<text x=\"16\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {})\">loss "
                   "(nats/token)</text>\n",
                   (T + H - B) / 2, (T + H - B) / 2);
  auto polyline = [&](const std::vector<CurvePoint>& pts, const char* color, double width) {
    std::string d;
    for (const auto& p : pts)
      if (std::isfinite(p.loss)) d += fmt::format("{:.1f},{:.1f} ", px(p.step), py(p.loss));
    if (!d.empty())
      s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" points=\"{}\"/>\n", color,
                       width, d);
    if (pts.size() <= 60)
      for (const auto& p : pts)
        if (std::isfinite(p.loss))
          s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", px(p.step),
                           py(p.loss), color);
  };
  if (train.size() > 60) {
    // Many noisy steps: the raw curve faint, a centred moving average (no lag) on top.
    std::vector<CurvePoint> finite, smooth;
    for (const auto& p : train)
      if (std::isfinite(p.loss)) finite.push_back(p);
    const size_t half = std::max<size_t>(2, finite.size() / 100);
    for (size_t i = 0; i < finite.size(); ++i) {
      const size_t lo = i >= half ? i - half : 0, hi = std::min(finite.size(), i + half + 1);
      double sum = 0;
      for (size_t k = lo; k < hi; ++k)
        sum += finite[k].loss;
      smooth.push_back({finite[i].step, sum / double(hi - lo)});
    }
    polyline(train, "#aec7e8", 1.0);
    polyline(smooth, "#1f77b4", 1.8);
  } else {
    polyline(train, "#1f77b4", 1.2);
  }
  polyline(val, "#d62728", 2.0);
  // legend
  const double lx = W - R - 150, ly = T + 10;
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"140\" height=\"44\" fill=\"white\" stroke=\"#999\"/>\n",
                   lx, ly);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#1f77b4\" stroke-width=\"2\"/>",
                   lx + 10, ly + 15, lx + 35, ly + 15);
  s += fmt::format("<text x=\"{}\" y=\"{}\">train</text>\n", lx + 42, ly + 19);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#d62728\" stroke-width=\"2\"/>",
                   lx + 10, ly + 33, lx + 35, ly + 33);
  s += fmt::format("<text x=\"{}\" y=\"{}\">validation</text>\n", lx + 42, ly + 37);
  s += "</svg>\n";

  io::writeFileAtomically(path, s);
}

} // namespace helios::train
