// The inspector library; being implemented.
namespace paraproof::ui {
int placeholder() { return 0; }
}  // namespace paraproof::ui
