// timing.cpp -- C++ reference timings of Pinocchio's derivative algorithms,
// linked against the Pinocchio shipped in the `pin` / `libpinocchio` wheels.
//
// Build: benchmarks/pinocchio_cpp/__init__.py (g++ -O3 -march=native -DNDEBUG
// -std=c++17 + the defines of the wheel's cmake config + -DEIGEN_MAX_ALIGN_BYTES=16
// -DEIGEN_MALLOC_ALREADY_ALIGNED=1 to stay ABI-compatible with the wheel's
// generic-x86-64 libraries, see README.md).
//
// Usage:
//   timing URDF [--floating 0|1] [--batches 50] [--calls N] [--pool 100]
//               [--seed 42] [--ff-bound 1] [--budget 0.01]
//               [--dump STATE_FILE OUT_DIR] [--no-timing]
//
// Prints ONE JSON object on stdout (timings in microseconds per call):
//   timings_us      min over batches of (steady_clock batch time / N)
//   timings_cpu_us  same with the thread's CPU time (robust to other processes
//                   competing for the cores; equal to timings_us on a quiet box)
//   batch_means_us  every batch's steady_clock mean
//
// Timed entries ("lib" = explicit template instantiation compiled into
// libpinocchio_default.so, i.e. the same machine code the Python bindings run;
// "native" = the same template instantiated in this translation unit with
// -march=native):
//   rnea_so          ComputeRNEASecondOrderDerivatives(model,data,q,v,a,T1..T4)
//                    (tensors zeroed once at allocation; the algorithm writes a
//                    fixed, topology-determined set of entries, see README)
//   rnea_so_setzero  same, plus setZero() of the four nv^3 tensors every call
//   rnea_deriv_lib   computeRNEADerivatives(model,data,q,v,a)   (into data)
//   rnea_deriv_native   impl::computeRNEADerivatives instantiated here
//   aba_deriv_lib    computeABADerivatives(model,data,q,v,tau)  (into data)
//   aba_deriv_native    impl::computeABADerivatives instantiated here
//   rnea_lib, aba_lib   plain rnea / aba (context only)
//
// --dump: STATE_FILE is a text file with three lines: q (nq numbers), v (nv),
// a (nv).  Writes into OUT_DIR the .npy files
//   d2tau_dqdq.npy d2tau_dvdv.npy d2tau_dqdv.npy d2tau_dadq.npy   (nv,nv,nv)
//   dtau_dq.npy dtau_dv.npy M.npy                                 (nv,nv)
//   tau.npy (nv,)  q.npy (nq,)  v.npy (nv,)  a.npy (nv,)
// For a tensor file, numpy's arr[i, j, k] == the Eigen tensor's T(i, j, k)
// (the raw column-major data is written with fortran_order=True).
// Layout, verified against finite differences and casrbd's AD (README.md), i = output tau_i:
//   d2tau_dqdq[i,j,k] = d/dq_k (dtau_dq[i,j])      j: inner q, k: outer q
//   d2tau_dvdv[i,j,k] = d2 tau_i / dv_j dv_k       symmetric in j,k
//   d2tau_dqdv[i,j,k] = d/dv_k (dtau_dq[i,j])      j: q, k: v
//   d2tau_dadq[i,j,k] = d/dq_k (M[i,j])            j: a, k: q

#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea-second-order-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/multibody.hpp>
#include <pinocchio/parsers/urdf.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace pin = pinocchio;
using Model = pin::Model;
using Data = pin::Data;
using VectorXd = Eigen::VectorXd;
using Tensor3 = Eigen::Tensor<double, 3>;  // column-major (Eigen default)

namespace {

struct Args {
  std::string urdf;
  bool floating = false;
  int batches = 50;
  int calls = -1;  // -1: choose from a time budget
  int pool = 100;
  unsigned seed = 42;
  double ff_bound = 1.0;
  double budget_s = 0.01;  // per batch, when calls == -1 (short batches: the
                           // min over many of them resists CPU contention)
  std::string state_file, out_dir;
  bool timing = true;
};

[[noreturn]] void usage(const char* msg) {
  std::cerr << "error: " << msg << "\n"
            << "usage: timing URDF [--floating 0|1] [--batches B] [--calls N] [--pool P]\n"
               "              [--seed S] [--ff-bound X] [--budget SECONDS]\n"
               "              [--dump STATE_FILE OUT_DIR] [--no-timing]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> s(argv + 1, argv + argc);
  for (size_t i = 0; i < s.size(); ++i) {
    auto need = [&](size_t k) {
      if (i + k >= s.size()) usage(("missing value after " + s[i]).c_str());
    };
    if (s[i] == "--floating") { need(1); a.floating = std::stoi(s[++i]) != 0; }
    else if (s[i] == "--batches") { need(1); a.batches = std::stoi(s[++i]); }
    else if (s[i] == "--calls") { need(1); a.calls = std::stoi(s[++i]); }
    else if (s[i] == "--pool") { need(1); a.pool = std::stoi(s[++i]); }
    else if (s[i] == "--seed") { need(1); a.seed = (unsigned)std::stoul(s[++i]); }
    else if (s[i] == "--ff-bound") { need(1); a.ff_bound = std::stod(s[++i]); }
    else if (s[i] == "--budget") { need(1); a.budget_s = std::stod(s[++i]); }
    else if (s[i] == "--dump") { need(2); a.state_file = s[++i]; a.out_dir = s[++i]; }
    else if (s[i] == "--no-timing") { a.timing = false; }
    else if (!s[i].empty() && s[i][0] == '-') usage(("unknown option " + s[i]).c_str());
    else if (a.urdf.empty()) a.urdf = s[i];
    else usage("more than one URDF given");
  }
  if (a.urdf.empty()) usage("no URDF given");
  if (a.batches < 1 || a.pool < 1) usage("batches and pool must be >= 1");
  return a;
}

// ---------------------------------------------------------------- .npy output
// Minimal NPY v1.0 writer: little-endian float64, given shape and order.
void write_npy(const std::string& path, const double* data,
               const std::vector<long>& shape, bool fortran_order) {
  std::ostringstream h;
  h << "{'descr': '<f8', 'fortran_order': " << (fortran_order ? "True" : "False")
    << ", 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) h << shape[i] << (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
  h << "), }";
  std::string header = h.str();
  // magic(6) + version(2) + len(2) + header + '\n', padded to a multiple of 64
  size_t total = 10 + header.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  header += std::string(pad, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  const char magic[] = "\x93NUMPY";
  f.write(magic, 6);
  const char ver[2] = {1, 0};
  f.write(ver, 2);
  unsigned short hl = (unsigned short)header.size();
  const char hlb[2] = {(char)(hl & 0xff), (char)(hl >> 8)};
  f.write(hlb, 2);
  f.write(header.data(), (std::streamsize)header.size());
  long n = 1;
  for (long d : shape) n *= d;
  f.write(reinterpret_cast<const char*>(data), (std::streamsize)(n * sizeof(double)));
}

void write_tensor(const std::string& path, const Tensor3& T) {
  // Eigen::Tensor default layout is column-major: T(i,j,k) is at
  // i + d0*(j + d1*k), which is exactly numpy's Fortran order.
  write_npy(path, T.data(), {(long)T.dimension(0), (long)T.dimension(1), (long)T.dimension(2)}, true);
}

template <typename Mat>
void write_matrix(const std::string& path, const Mat& M) {
  Eigen::MatrixXd C = M;  // column-major copy
  write_npy(path, C.data(), {(long)C.rows(), (long)C.cols()}, true);
}

void write_vector(const std::string& path, const VectorXd& v) {
  write_npy(path, v.data(), {(long)v.size()}, false);
}

VectorXd read_line_vector(std::istream& in, long expected, const char* what) {
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) break;
  }
  std::istringstream ls(line);
  std::vector<double> vals;
  double x;
  while (ls >> x) vals.push_back(x);
  if ((long)vals.size() != expected) {
    std::ostringstream m;
    m << "state file: expected " << expected << " numbers for " << what << ", got " << vals.size();
    throw std::runtime_error(m.str());
  }
  return Eigen::Map<VectorXd>(vals.data(), expected);
}

// ---------------------------------------------------------------- timing
struct Result {
  double best_us;      // min over batches of steady_clock mean per call
  double best_cpu_us;  // same with the thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
  std::vector<double> batch_us;
  long calls;
};

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// f(k) runs one call on state k of the pool.
Result time_it(const std::function<void(int)>& f, int pool, int batches, long calls, double budget_s) {
  using clock = std::chrono::steady_clock;
  // warm-up (also used to size N when calls < 0)
  auto t0 = clock::now();
  long warm = 0;
  do {
    f((int)(warm % pool));
    ++warm;
  } while (std::chrono::duration<double>(clock::now() - t0).count() < 0.02 || warm < pool);
  double per_call = std::chrono::duration<double>(clock::now() - t0).count() / (double)warm;
  long n = calls > 0 ? calls : std::max<long>(10, (long)(budget_s / per_call));
  Result r;
  r.calls = n;
  r.best_us = r.best_cpu_us = std::numeric_limits<double>::infinity();
  int k = 0;  // the pool index runs on across batches
  for (int b = 0; b < batches; ++b) {
    double c0 = thread_cpu_seconds();
    auto s = clock::now();
    for (long i = 0; i < n; ++i) {
      f(k);
      if (++k == pool) k = 0;
    }
    auto e = clock::now();
    double c1 = thread_cpu_seconds();
    double us = std::chrono::duration<double, std::micro>(e - s).count() / (double)n;
    r.batch_us.push_back(us);
    r.best_us = std::min(r.best_us, us);
    r.best_cpu_us = std::min(r.best_cpu_us, 1e6 * (c1 - c0) / (double)n);
  }
  return r;
}

void setzero4(Tensor3& a, Tensor3& b, Tensor3& c, Tensor3& d) {
  a.setZero(); b.setZero(); c.setZero(); d.setZero();
}

double max_abs_diff(const Tensor3& a, const Tensor3& b) {
  double m = 0;
  for (long i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a.data()[i] - b.data()[i]));
  return m;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += c; }
    else if ((unsigned char)c < 0x20) { char buf[8]; std::snprintf(buf, sizeof buf, "\\u%04x", c); o += buf; }
    else o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  try {
    Model model;
    if (args.floating)
      pin::urdf::buildModel(args.urdf, pin::JointModelFreeFlyer(), model);
    else
      pin::urdf::buildModel(args.urdf, model);
    Data data(model);
    const int nq = model.nq, nv = (int)model.nv;

    std::ostringstream js;
    js.precision(17);
    js << "{\"pinocchio_version\": \"" << PINOCCHIO_VERSION << "\""
       << ", \"urdf\": \"" << json_escape(args.urdf) << "\""
       << ", \"model_name\": \"" << json_escape(model.name) << "\""
       << ", \"floating\": " << (args.floating ? "true" : "false")
       << ", \"nq\": " << nq << ", \"nv\": " << nv << ", \"njoints\": " << model.njoints
       << ", \"eigen_max_align_bytes\": " << EIGEN_MAX_ALIGN_BYTES
       << ", \"eigen_simd\": \"" << Eigen::SimdInstructionSetsInUse() << "\"";

    // Four output tensors of ComputeRNEASecondOrderDerivatives.
    Tensor3 d2tau_dqdq(nv, nv, nv), d2tau_dvdv(nv, nv, nv), d2tau_dqdv(nv, nv, nv), d2tau_dadq(nv, nv, nv);
    setzero4(d2tau_dqdq, d2tau_dvdv, d2tau_dqdv, d2tau_dadq);

    // ------------------------------------------------------------ dump
    if (!args.state_file.empty()) {
      std::ifstream in(args.state_file);
      if (!in) throw std::runtime_error("cannot open state file " + args.state_file);
      VectorXd q = read_line_vector(in, nq, "q");
      VectorXd v = read_line_vector(in, nv, "v");
      VectorXd a = read_line_vector(in, nv, "a");
      // fresh tensors, zeroed as the documentation requires
      Tensor3 T1(nv, nv, nv), T2(nv, nv, nv), T3(nv, nv, nv), T4(nv, nv, nv);
      setzero4(T1, T2, T3, T4);
      pin::ComputeRNEASecondOrderDerivatives(model, data, q, v, a, T1, T2, T3, T4);
      std::string d = args.out_dir + "/";
      write_tensor(d + "d2tau_dqdq.npy", T1);
      write_tensor(d + "d2tau_dvdv.npy", T2);
      write_tensor(d + "d2tau_dqdv.npy", T3);
      write_tensor(d + "d2tau_dadq.npy", T4);
      Data d2(model);
      pin::computeRNEADerivatives(model, d2, q, v, a);
      Eigen::MatrixXd M = d2.M;
      M.triangularView<Eigen::StrictlyLower>() = M.transpose().triangularView<Eigen::StrictlyLower>();
      write_matrix(d + "dtau_dq.npy", d2.dtau_dq);
      write_matrix(d + "dtau_dv.npy", d2.dtau_dv);
      write_matrix(d + "M.npy", M);
      VectorXd tau = pin::rnea(model, d2, q, v, a);
      write_vector(d + "tau.npy", tau);
      write_vector(d + "q.npy", q);
      write_vector(d + "v.npy", v);
      write_vector(d + "a.npy", a);

      // Re-run on "dirty" tensors (previous results of another state) without
      // setZero: must give the same values if the written pattern is fixed.
      VectorXd q2 = pin::neutral(model);
      VectorXd v2 = VectorXd::Constant(nv, 0.3), a2 = VectorXd::Constant(nv, -0.2);
      pin::ComputeRNEASecondOrderDerivatives(model, data, q2, v2, a2, T1, T2, T3, T4);
      pin::ComputeRNEASecondOrderDerivatives(model, data, q, v, a, T1, T2, T3, T4);
      Tensor3 R1(nv, nv, nv), R2(nv, nv, nv), R3(nv, nv, nv), R4(nv, nv, nv);
      setzero4(R1, R2, R3, R4);
      pin::ComputeRNEASecondOrderDerivatives(model, data, q, v, a, R1, R2, R3, R4);
      double dirty = std::max(std::max(max_abs_diff(T1, R1), max_abs_diff(T2, R2)),
                              std::max(max_abs_diff(T3, R3), max_abs_diff(T4, R4)));
      js << ", \"dump_dir\": \"" << json_escape(args.out_dir) << "\""
         << ", \"dump_rerun_without_setzero_maxdiff\": " << dirty;
    }

    // ------------------------------------------------------------ timing
    if (args.timing) {
      std::srand(args.seed);
      VectorXd lo = model.lowerPositionLimit, hi = model.upperPositionLimit;
      if (args.floating) {  // free-flyer translation: finite box
        for (int i = 0; i < 3; ++i) { lo[i] = -args.ff_bound; hi[i] = args.ff_bound; }
      }
      // Any other unbounded entry (Pinocchio uses +-DBL_MAX, e.g. for the
      // free-flyer; limits of rotation parts are ignored by the sampler anyway).
      for (int i = args.floating ? 7 : 0; i < nq; ++i) {
        if (!(std::abs(lo[i]) < 1e300)) lo[i] = -M_PI;
        if (!(std::abs(hi[i]) < 1e300)) hi[i] = M_PI;
      }
      const int P = args.pool;
      std::vector<VectorXd> Q(P), V(P), A(P), TAU(P);
      for (int k = 0; k < P; ++k) {
        Q[k] = VectorXd(nq);
        pin::randomConfiguration(model, lo, hi, Q[k]);
        V[k] = VectorXd::Random(nv);
        A[k] = VectorXd::Random(nv);
        TAU[k] = VectorXd::Random(nv);
      }

      // consistency lib vs native instantiation (guards against ABI mismatch)
      {
        Data dl(model), dn(model);
        pin::computeRNEADerivatives(model, dl, Q[0], V[0], A[0]);
        pin::impl::computeRNEADerivatives(model, dn, Q[0], V[0], A[0], dn.dtau_dq, dn.dtau_dv, dn.M);
        // relative: max |lib - native| / max |lib|
        auto rel = [](const auto& x, const auto& y) {
          return (x - y).cwiseAbs().maxCoeff() / std::max(1e-300, x.cwiseAbs().maxCoeff());
        };
        double e1 = std::max(rel(dl.dtau_dq, dn.dtau_dq), rel(dl.dtau_dv, dn.dtau_dv));
        pin::computeABADerivatives(model, dl, Q[0], V[0], TAU[0]);
        pin::impl::computeABADerivatives(model, dn, Q[0], V[0], TAU[0], dn.ddq_dq, dn.ddq_dv, dn.Minv);
        double e2 = std::max(rel(dl.ddq_dq, dn.ddq_dq), rel(dl.ddq_dv, dn.ddq_dv));
        js << ", \"lib_vs_native_relerr\": {\"rnea_deriv\": " << e1 << ", \"aba_deriv\": " << e2 << "}";
      }

      std::vector<std::pair<std::string, std::function<void(int)>>> algos = {
          {"rnea_so",
           [&](int k) {
             pin::ComputeRNEASecondOrderDerivatives(model, data, Q[k], V[k], A[k], d2tau_dqdq,
                                                    d2tau_dvdv, d2tau_dqdv, d2tau_dadq);
           }},
          {"rnea_so_setzero",
           [&](int k) {
             setzero4(d2tau_dqdq, d2tau_dvdv, d2tau_dqdv, d2tau_dadq);
             pin::ComputeRNEASecondOrderDerivatives(model, data, Q[k], V[k], A[k], d2tau_dqdq,
                                                    d2tau_dvdv, d2tau_dqdv, d2tau_dadq);
           }},
          {"rnea_deriv_lib", [&](int k) { pin::computeRNEADerivatives(model, data, Q[k], V[k], A[k]); }},
          {"rnea_deriv_native",
           [&](int k) {
             pin::impl::computeRNEADerivatives(model, data, Q[k], V[k], A[k], data.dtau_dq,
                                               data.dtau_dv, data.M);
           }},
          {"aba_deriv_lib", [&](int k) { pin::computeABADerivatives(model, data, Q[k], V[k], TAU[k]); }},
          {"aba_deriv_native",
           [&](int k) {
             pin::impl::computeABADerivatives(model, data, Q[k], V[k], TAU[k], data.ddq_dq,
                                              data.ddq_dv, data.Minv);
           }},
          {"rnea_lib", [&](int k) { pin::rnea(model, data, Q[k], V[k], A[k]); }},
          {"aba_lib", [&](int k) { pin::aba(model, data, Q[k], V[k], TAU[k]); }},
      };

      std::ostringstream tj, bj, cj, uj;
      tj.precision(6); bj.precision(6); uj.precision(6);
      bool first = true;
      for (auto& [name, f] : algos) {
        Result r = time_it(f, P, args.batches, args.calls, args.budget_s);
        std::string sep = first ? "" : ", ";
        first = false;
        tj << sep << "\"" << name << "\": " << r.best_us;
        uj << sep << "\"" << name << "\": " << r.best_cpu_us;
        cj << sep << "\"" << name << "\": " << r.calls;
        bj << sep << "\"" << name << "\": [";
        for (size_t i = 0; i < r.batch_us.size(); ++i) bj << (i ? ", " : "") << r.batch_us[i];
        bj << "]";
      }
      js << ", \"batches\": " << args.batches << ", \"pool\": " << P << ", \"seed\": " << args.seed
         << ", \"timings_us\": {" << tj.str() << "}"
         << ", \"timings_cpu_us\": {" << uj.str() << "}"
         << ", \"calls_per_batch\": {" << cj.str() << "}"
         << ", \"batch_means_us\": {" << bj.str() << "}";
    }
    js << "}";
    std::cout << js.str() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
