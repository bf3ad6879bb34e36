// The libprotobuf baseline for onnxio's benchmarks: times the C++ classes
// that protoc generates from onnx-ml.proto on one model file.
//
//   bench/out/pb_bench MODEL.onnx [REPEATS] [OUT_DIR]
//
// Built by `make bench` (see the Makefile) from Debian's protoc and
// libprotobuf-dev. Every figure is the best of REPEATS runs (default 5), in
// seconds, with the file already in the page cache; "samples" has every run:
//   parse          ParseFromArray of the whole file held in memory, into a
//                  fresh ModelProto (its destruction is not timed)
//   serialize      ByteSizeLong + SerializeToArray into a preallocated buffer
//   load_file      open + read the file into memory + ParseFromArray
//   save_file      ByteSizeLong + SerializeToArray + write to a temporary
//                  file in OUT_DIR + fsync + rename (what onnxio_save_model
//                  does for durability); skipped without OUT_DIR
// It also checks that SerializeToArray gives back the input bytes. Prints one
// JSON object on stdout.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "onnx-ml.pb.h"

namespace {

double now() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "pb_bench: %s: %s\n", what.c_str(), errno ? std::strerror(errno) : "failed");
    std::exit(1);
}

std::vector<char> read_file(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die(std::string("open ") + path);
    struct stat st;
    if (fstat(fd, &st) != 0) die(std::string("stat ") + path);
    std::vector<char> buf(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < buf.size()) {
        ssize_t n = read(fd, buf.data() + done, buf.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) die(std::string("read ") + path);
        done += static_cast<size_t>(n);
    }
    close(fd);
    return buf;
}

void write_all(int fd, const char *p, size_t n, const std::string &path) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("write " + path);
        p += w;
        n -= static_cast<size_t>(w);
    }
}

}  // namespace

int main(int argc, char **argv) {
    GOOGLE_PROTOBUF_VERIFY_VERSION;
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s MODEL.onnx [REPEATS] [OUT_DIR]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
    if (repeats < 1) repeats = 1;
    const char *out_dir = argc > 3 ? argv[3] : nullptr;

    std::vector<char> input = read_file(path);
    if (input.size() > static_cast<size_t>(INT32_MAX)) {
        std::fprintf(stderr, "pb_bench: %s is %zu bytes; libprotobuf parses at most 2 GiB\n", path,
                     input.size());
        return 1;
    }
    const int size = static_cast<int>(input.size());

    std::vector<double> s_parse, s_serialize, s_load_file, s_save_file;
    double parse = 1e30, serialize = 1e30, load_file = 1e30, save_file = -1;
    for (int r = 0; r < repeats; r++) {
        auto m = std::make_unique<onnx::ModelProto>();
        double t0 = now();
        if (!m->ParseFromArray(input.data(), size)) die("ParseFromArray");
        double t = now() - t0;
        s_parse.push_back(t);
        if (t < parse) parse = t;
    }

    onnx::ModelProto model;
    if (!model.ParseFromArray(input.data(), size)) die("ParseFromArray");
    std::vector<char> output(input.size());
    bool identical = false;
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        size_t n = model.ByteSizeLong();
        if (n != output.size()) output.resize(n);
        if (!model.SerializeToArray(output.data(), static_cast<int>(n))) die("SerializeToArray");
        double t = now() - t0;
        s_serialize.push_back(t);
        if (t < serialize) serialize = t;
        identical = output.size() == input.size() &&
                    std::memcmp(output.data(), input.data(), input.size()) == 0;
    }

    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        std::vector<char> bytes = read_file(path);
        auto m = std::make_unique<onnx::ModelProto>();
        if (!m->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) die("ParseFromArray");
        double t = now() - t0;
        s_load_file.push_back(t);
        if (t < load_file) load_file = t;
    }

    if (out_dir) {
        std::string dst = std::string(out_dir) + "/pb_bench_out.onnx";
        std::string tmp = dst + ".tmp";
        save_file = 1e30;
        for (int r = 0; r < repeats; r++) {
            double t0 = now();
            size_t n = model.ByteSizeLong();
            std::vector<char> bytes(n);
            if (!model.SerializeToArray(bytes.data(), static_cast<int>(n))) die("SerializeToArray");
            int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0) die("open " + tmp);
            write_all(fd, bytes.data(), n, tmp);
            if (fsync(fd) != 0) die("fsync " + tmp);
            if (close(fd) != 0) die("close " + tmp);
            if (rename(tmp.c_str(), dst.c_str()) != 0) die("rename " + tmp);
            double t = now() - t0;
            s_save_file.push_back(t);
            if (t < save_file) save_file = t;
        }
        unlink(dst.c_str());
    }

    std::printf("{\"tool\": \"libprotobuf\", \"version\": \"%s\", \"model\": \"%s\", \"bytes\": %zu, "
                "\"repeats\": %d, \"parse\": %.6f, \"serialize\": %.6f, \"load_file\": %.6f, "
                "\"save_file\": %s, \"identical\": %s, \"samples\": {",
                google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION).c_str(), path,
                input.size(), repeats, parse, serialize, load_file,
                save_file < 0 ? "null" : std::to_string(save_file).c_str(),
                identical ? "true" : "false");
    const std::pair<const char *, const std::vector<double> *> all[] = {
        {"parse", &s_parse}, {"serialize", &s_serialize}, {"load_file", &s_load_file},
        {"save_file", &s_save_file}};
    bool first = true;
    for (const auto &a : all) {
        if (a.second->empty()) continue;
        std::printf("%s\"%s\": [", first ? "" : ", ", a.first);
        for (size_t i = 0; i < a.second->size(); i++)
            std::printf("%s%.6f", i ? ", " : "", (*a.second)[i]);
        std::printf("]");
        first = false;
    }
    std::printf("}}\n");
    google::protobuf::ShutdownProtobufLibrary();
    return 0;
}
