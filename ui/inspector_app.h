// The paraproof-inspector program: command line, window, and the headless verify-and-screenshot mode.
#pragma once

#include <QString>

namespace paraproof::ui {

class CompareWindow;
class MainWindow;

int runInspector(int argc, char** argv);

// Runs verification (if `verify`), selects the first failing stage, waits for the views to settle, writes the
// failure report (if `failureReport` is not empty) and saves a screenshot of the whole window (if
// `screenshot` is not empty). Returns the exit code of `paraproof verify` (2 when a file cannot be written).
int runHeadless(MainWindow& window, bool verify, const QString& screenshot,
                const QString& failureReport = {});

// Processes events until both graph views have no layout in flight (or the timeout passes).
bool waitForLayouts(MainWindow& window, int timeoutMs = 30000);
// The same for a compare window: its comparison built and both views laid out.
bool waitForLayouts(CompareWindow& window, int timeoutMs = 30000);

// Waits for the comparison, prints its count line on stdout, saves a screenshot of the window. Returns the
// exit code of `paraproof diff`: 0 identical, 1 different, 2 the plans could not be compared.
// Runs the guided tour of one catalog bug with `layers` layers, saving DIR/tour-BUG-N-STEP.png after each
// step and printing what each step showed. 0: the tour taught the bug (the correct plan proved equivalent,
// the injected one not, a difference shown), 1: it did not, 2: a step failed.
int runTourHeadless(MainWindow& window, const QString& bugId, int layers, const QString& dir);

int runCompareHeadless(CompareWindow& window, const QString& screenshot);

}  // namespace paraproof::ui
