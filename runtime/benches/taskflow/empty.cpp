// Per-task cost of Taskflow for the wsp runtime bench's empty-kernel graphs (10,000 tasks:
// chain, wide = independent, wavefront = 100 x 100 grid), one worker: build the graph and run
// it, REPS times; prints the median ns per task (docs/perf.md: compare.sh runs it beside wsp).
#include <taskflow/taskflow.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
    const char* shape = argc > 1 ? argv[1] : "chain";
    int reps = argc > 2 ? std::atoi(argv[2]) : 21;
    const int n = 10000, side = 100;
    tf::Executor ex(1);
    std::vector<double> per;
    for (int r = 0; r < reps; r++) {
        auto t0 = std::chrono::steady_clock::now();
        tf::Taskflow g;
        if (std::strcmp(shape, "chain") == 0) {
            tf::Task prev;
            for (int i = 0; i < n; i++) {
                tf::Task t = g.emplace([] {});
                if (i > 0) prev.precede(t);
                prev = t;
            }
        } else if (std::strcmp(shape, "wide") == 0) {
            for (int i = 0; i < n; i++) g.emplace([] {});
        } else {
            std::vector<tf::Task> cell(n);
            for (int i = 0; i < side; i++)
                for (int j = 0; j < side; j++) {
                    tf::Task t = g.emplace([] {});
                    if (i > 0) cell[(i - 1) * side + j].precede(t);
                    if (j > 0) cell[i * side + j - 1].precede(t);
                    cell[i * side + j] = t;
                }
        }
        ex.run(g).wait();
        auto t1 = std::chrono::steady_clock::now();
        per.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    }
    std::sort(per.begin(), per.end());
    std::printf("%.1f\n", per[per.size() / 2]);
    return 0;
}
