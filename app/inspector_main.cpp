// paraproof-inspector: the desktop inspector (see docs/inspector.md).
#include "ui/inspector_app.h"

int main(int argc, char** argv) {
  return paraproof::ui::runInspector(argc, argv);
}
