// The executables run on jemalloc with transparent huge pages (app/allocator.cpp, docs/scale.md
// "Allocator"): a link order or a dropped settings symbol would silently bring glibc's malloc back and
// cost a quarter of the largest verifications. The sanitizer build has its own allocator: skipped there.
#include <QtTest>

#include <string>

#ifdef PARAPROOF_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

class TestAllocator : public QObject {
  Q_OBJECT
 private slots:
  void runsOnJemallocWithHugePages() {
#ifndef PARAPROOF_JEMALLOC
    QSKIP("built without jemalloc (PARAPROOF_JEMALLOC off or a sanitizer build)");
#else
    const char* thp = nullptr;
    size_t size = sizeof(thp);
    QCOMPARE(mallctl("opt.thp", &thp, &size, nullptr, 0), 0);
    QCOMPARE(std::string(thp), std::string("always"));
    // And operator new really goes through it: a fresh block is counted on this thread.
    uint64_t allocated = 0;
    size = sizeof(allocated);
    QCOMPARE(mallctl("thread.allocated", &allocated, &size, nullptr, 0), 0);
    auto* block = new char[1 << 20];
    block[0] = 1;
    uint64_t after = 0;
    QCOMPARE(mallctl("thread.allocated", &after, &size, nullptr, 0), 0);
    delete[] block;
    QVERIFY(after >= allocated + (1 << 20));
#endif
  }
};

QTEST_GUILESS_MAIN(TestAllocator)
#include "test_allocator.moc"
