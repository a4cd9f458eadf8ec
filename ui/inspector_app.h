// The paraproof-inspector program: command line, window, and the headless verify-and-screenshot mode.
#pragma once

class QString;

namespace paraproof::ui {

class MainWindow;

int runInspector(int argc, char** argv);

// Runs verification (if `verify`), selects the first failing stage, waits for the views to settle and saves a
// screenshot of the whole window (if `screenshot` is not empty). Returns the exit code of `paraproof verify`.
int runHeadless(MainWindow& window, bool verify, const QString& screenshot);

// Processes events until both graph views have no layout in flight (or the timeout passes).
bool waitForLayouts(MainWindow& window, int timeoutMs = 30000);

}  // namespace paraproof::ui
