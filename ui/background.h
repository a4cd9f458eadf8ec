// Work on the pool with its result handed back to a QObject's thread through that object's event loop.
// QFuture::then(context, f) calls f at once, inside the call, when the work has already ended (a missing
// file fails in microseconds): the caller then has not yet connected to the signals f emits. Delivering
// through a queued call never does that; nothing is delivered once `context` is destroyed.
#pragma once

#include <QMetaObject>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>
#include <type_traits>
#include <utility>

namespace paraproof::ui {

template <typename Work, typename Deliver>
void runInBackground(QObject* context, Work work, Deliver deliver) {
  using Result = std::invoke_result_t<Work&>;  // a generic continuation would be handed the QFuture
  QtConcurrent::run(std::move(work))
      .then(context, [context, deliver = std::move(deliver)](Result result) mutable {
        QMetaObject::invokeMethod(
            context,
            [deliver = std::move(deliver), result = std::move(result)]() mutable {
              deliver(std::move(result));
            },
            Qt::QueuedConnection);
      });
}

}  // namespace paraproof::ui
